/**
 * What a pull or push came to (src/telemetry/facts.ts), one case per kind, as `observe` records
 * it: the span, the duration metric's labels and the inspector's live numbers say what happened,
 * and only that. The common cases are in telemetry.test.ts; these are the rest.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handlePull, handlePush, memoryStorage } from '../../src/index.js';
import { json } from '../../src/base/reply.js';
import { HTTPError } from '../../src/base/errors.js';
import { LiveStats } from '../../src/telemetry/live.js';
import { observe, type PullFacts, type PushFacts } from '../../src/telemetry/telemetry.js';
import { mutation, post, pull, pullBody, push, pushBody, testContext } from '../support/helpers.js';
import { onlySpan, registerSdk, type TestSdk } from './sdk.js';

let sdk: TestSdk;
beforeEach(() => {
  sdk = registerSdk();
});
afterEach(() => sdk.stop());

/** The only span named `name`. */
const only = (name: string) => onlySpan(sdk, name);

describe('a pull', () => {
  it('that found the client state lost is ClientStateNotFound, for the space and group it named', async () => {
    const ctx = testContext({ space: () => 'room' });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const { cookie } = await pull(ctx, 'g', null);
    const ahead = { ...(cookie as object), order: (cookie as { order: number }).order + 1 };
    expect(await (await handlePull(post('/pull', pullBody('g', ahead)), ctx)).json()).toEqual({ error: 'ClientStateNotFound' });
    expect(sdk.spans('viewsync pull')[1]!.attributes).toEqual({
      'viewsync.space': 'room',
      'viewsync.client_group_id': 'g',
      'viewsync.outcome': 'ClientStateNotFound',
      'http.response.status_code': 200,
    });
  });

  it('that failed once it named its space is a 500 for that space, counted under its schema version', async () => {
    const ctx = testContext({
      space: () => 'room',
      schema: { current: '2' },
      storage: { ...memoryStorage(), transaction: () => Promise.reject(new RangeError('disk on fire')) },
    });
    expect((await handlePull(post('/pull', pullBody('g', null, { schemaVersion: '2' })), ctx)).status).toBe(500);
    const span = only('viewsync pull');
    expect(span.attributes).toMatchObject({ 'viewsync.space': 'room', 'viewsync.client_group_id': 'g', 'viewsync.outcome': 'InternalServerError' });
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    const [point] = await sdk.points<Histogram>('viewsync.pull.duration');
    expect(point!.attributes).toEqual({ 'viewsync.outcome': 'InternalServerError', 'viewsync.schema_version': '2' });
  });
});

describe('a push', () => {
  it('that found the client state lost is ClientStateNotFound: its committed counts are told, its failures are not', async () => {
    const ctx = testContext({ space: () => 'room', transactionPerMutation: true });
    // The first mutation fails for good and is committed; the second is one past what the store has.
    const reply = await handlePush(
      post('/push', pushBody('g', [mutation('c', 1, 'putThenFail', { key: 'a', value: 1 }), mutation('c', 3, 'put', { key: 'b', value: 1 })])),
      ctx,
    );
    expect(await reply.json()).toEqual({ error: 'ClientStateNotFound' });
    const span = only('viewsync push');
    expect(span.attributes).toMatchObject({
      'viewsync.space': 'room',
      'viewsync.client_group_id': 'g',
      'viewsync.push.mutations': 2,
      'viewsync.push.mutations.processed': 0,
      'viewsync.push.mutations.failed': 1,
      'viewsync.outcome': 'ClientStateNotFound',
      'http.response.status_code': 200,
    });
    expect(span.events).toEqual([]);
    expect(ctx.errors).toEqual([]);
  });

  it('refused for a client of another group is a 400 for its space and group, with no mutation counted', async () => {
    const ctx = testContext({ space: () => 'room' });
    await push(ctx, 'g1', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const reply = await handlePush(post('/push', pushBody('g2', [mutation('c', 2, 'put', { key: 'a', value: 2 })])), ctx);
    expect(reply.status).toBe(400);
    const span = sdk.spans('viewsync push')[1]!;
    expect(span.attributes).toEqual({
      'viewsync.space': 'room',
      'viewsync.client_group_id': 'g2',
      'viewsync.outcome': 'BadRequest',
      'http.response.status_code': 400,
    });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    const points = await sdk.points('viewsync.push.mutations');
    expect(points.map(({ attributes, value }) => [attributes['viewsync.mutation.result'], value])).toEqual([['processed', 1]]);
  });

  it('that failed once it named its space is a 500 for that space', async () => {
    const ctx = testContext({ space: () => 'room', storage: { ...memoryStorage(), transaction: () => Promise.reject(new Error('gone')) } });
    expect((await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 })])), ctx)).status).toBe(500);
    expect(only('viewsync push').attributes).toEqual({
      'viewsync.space': 'room',
      'viewsync.client_group_id': 'g',
      'viewsync.outcome': 'InternalServerError',
      'http.response.status_code': 500,
    });
  });
});

describe("the inspector's live numbers", () => {
  const request = post('/push', {});
  const by = { space: 'room', clientGroup: { clientGroupID: 'g' }, schemaVersion: undefined };
  const ran = { tally: new Map([['put', { processed: 3, failed: 0, skipped: 0 }]]), waitedMs: 0, batchSize: 1, failures: [] };
  const pushes: Array<[string, PushFacts, { mutations: number; errors: number; space: boolean }]> = [
    ['unsupported', { kind: 'unsupported', reply: json({ error: 'VersionNotSupported', versionType: 'push' }) }, { mutations: 0, errors: 0, space: false }],
    [
      'failed before it named a space',
      { kind: 'failed', by: undefined, error: new HTTPError(400, 'bad'), reply: json({}, 400) },
      { mutations: 0, errors: 0, space: false },
    ],
    ['failed after', { kind: 'failed', by, error: new Error('gone'), reply: json({}, 500) }, { mutations: 0, errors: 1, space: true }],
    [
      'pushed, applied',
      { kind: 'pushed', by, mutations: 3, outcome: { kind: 'applied', ...ran }, mutators: {}, reply: json({}) },
      { mutations: 3, errors: 0, space: true },
    ],
    [
      'pushed, stopped',
      { kind: 'pushed', by, mutations: 4, outcome: { kind: 'stopped', ...ran }, mutators: {}, reply: json({}, 503) },
      { mutations: 4, errors: 1, space: true },
    ],
    [
      'pushed, lost',
      { kind: 'pushed', by, mutations: 5, outcome: { kind: 'lost', ...ran }, mutators: {}, reply: json({ error: 'ClientStateNotFound' }) },
      { mutations: 5, errors: 0, space: true },
    ],
  ];

  it.each(pushes)('count a push that came to %s as it says', async (_, facts, want) => {
    const live = new LiveStats();
    expect(await observe('push', request, async () => facts, live)).toBe(facts.reply);
    expect(live.seconds().at(-1)).toMatchObject({ pushes: 1, pulls: 0, mutations: want.mutations, errors: want.errors });
    expect(live.activity('room')).toEqual({ pushes: want.space ? 1 : 0, pulls: 0 });
  });

  const pulls: Array<[string, PullFacts, boolean]> = [
    ['unsupported', { kind: 'unsupported', reply: json({ error: 'VersionNotSupported', versionType: 'pull' }) }, false],
    ['lost', { kind: 'lost', by, reply: json({ error: 'ClientStateNotFound' }) }, true],
    ['patched', { kind: 'patched', by, patch: [], sentOperations: undefined, reply: json({ cookie: 1, lastMutationIDChanges: {}, patch: [] }) }, true],
  ];

  it.each(pulls)('count a pull that came to %s for its space once it named one', async (_, facts, space) => {
    const live = new LiveStats();
    expect(await observe('pull', request, async () => facts, live)).toBe(facts.reply);
    expect(live.seconds().at(-1)).toMatchObject({ pushes: 0, pulls: 1, mutations: 0, errors: 0 });
    expect(live.activity('room')).toEqual({ pushes: 0, pulls: space ? 1 : 0 });
  });
});
