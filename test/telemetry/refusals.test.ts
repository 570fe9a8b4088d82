import type { Histogram } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handlePull, handlePush } from '../../src/index.js';
import { mutation, post, pullBody, pushBody, testContext } from '../support/helpers.js';
import { registerSdk, type TestSdk } from './sdk.js';

// Refusals by a rate (429) and by a space's quota, as telemetry reports them.

let sdk: TestSdk;
beforeEach(() => {
  sdk = registerSdk();
});
afterEach(() => sdk.stop());

async function refusals(): Promise<Record<string, number>> {
  const points = await sdk.points('viewsync.refusals');
  return Object.fromEntries(points.map(({ attributes, value }) => [String(attributes['viewsync.refusal']), value]));
}

describe('refusals', () => {
  it('a rate refusal is the outcome TooManyRequests (not an error) and counts as rate.pushes or rate.pulls', async () => {
    const ctx = testContext({ rates: { pushesPerSecond: 1, pullsPerSecond: 1 }, clock: () => 0 });
    const pushOnce = (id: number) => handlePush(post('/push', pushBody('g', [mutation('c', id, 'put', { key: 'a', value: id })])), ctx);
    expect((await pushOnce(1)).status).toBe(200);
    expect((await pushOnce(2)).status).toBe(429);
    expect((await handlePull(post('/pull', pullBody('g', null)), ctx)).status).toBe(200);
    expect((await handlePull(post('/pull', pullBody('g', null)), ctx)).status).toBe(429);
    const [, refused] = sdk.spans('viewsync push');
    expect(refused!.attributes).toMatchObject({ 'viewsync.outcome': 'TooManyRequests', 'http.response.status_code': 429 });
    expect(refused!.status.code).toBe(0);
    const durations = await sdk.points<Histogram>('viewsync.push.duration');
    expect(durations.map((point) => point.attributes['viewsync.outcome']).sort()).toEqual(['TooManyRequests', 'ok']);
    expect(await refusals()).toEqual({ 'rate.pushes': 1, 'rate.pulls': 1 });
  });

  it('a quota refusal is a failed mutation on the span (error.type QuotaExceededError) and counts as quota.entries or quota.bytes', async () => {
    const ctx = testContext({ quotas: { entries: 1, bytes: 100 } });
    const response = await handlePush(
      post(
        '/push',
        pushBody('g', [
          mutation('c', 1, 'put', { key: 'a', value: 1 }),
          mutation('c', 2, 'put', { key: 'b', value: 2 }),
          mutation('c', 3, 'put', { key: 'a', value: 'x'.repeat(200) }),
        ]),
      ),
      ctx,
    );
    expect(response.status).toBe(200);
    const [span] = sdk.spans('viewsync push');
    expect(span!.attributes).toMatchObject({ 'viewsync.outcome': 'ok', 'viewsync.push.mutations.processed': 1, 'viewsync.push.mutations.failed': 2 });
    expect(span!.events.map((event) => event.attributes?.['error.type'])).toEqual(['QuotaExceededError', 'QuotaExceededError']);
    expect(await refusals()).toEqual({ 'quota.entries': 1, 'quota.bytes': 1 });
  });
});
