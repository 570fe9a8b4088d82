import { readFileSync } from 'node:fs';
import { SpanStatusCode } from '@opentelemetry/api';
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handlePoke, handlePull, handlePush, memoryStorage, type SyncContext } from '../../src/index.js';
import { SCOPE, UNKNOWN_MUTATOR, VERSION } from '../../src/telemetry/telemetry.js';
import { gate } from '../support/gate.js';
import { mutation, post, pull, pullBody, push, pushBody, testContext, testMutators } from '../support/helpers.js';
import { onlySpan, registerSdk, type TestSdk } from './sdk.js';

let sdk: TestSdk;
beforeEach(() => {
  sdk = registerSdk();
});
afterEach(() => sdk.stop());

/** The only span named `name`. */
const only = (name: string) => onlySpan(sdk, name);

describe('the pull span', () => {
  it('is named `viewsync pull` and carries the space, client group, request ID, patch size, reset and outcome', async () => {
    const ctx = testContext({ space: () => 'room-1' });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'k', value: 'é' })]);
    const response = await handlePull(post('/pull', pullBody('g', null), { 'x-replicache-requestid': 'c-7-0' }), ctx);
    const text = await response.text();
    const span = only('viewsync pull');
    expect(span.instrumentationScope).toMatchObject({ name: SCOPE, version: VERSION });
    expect(span.attributes).toEqual({
      'viewsync.request_id': 'c-7-0',
      'viewsync.space': 'room-1',
      'viewsync.client_group_id': 'g',
      'viewsync.pull.reset': true,
      'viewsync.pull.patch.operations': 2,
      'viewsync.pull.streamed': false,
      'viewsync.pull.body.size': new TextEncoder().encode(text).byteLength,
      'viewsync.outcome': 'ok',
      'http.response.status_code': 200,
    });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('an incremental pull is not a reset', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })]);
    const { cookie } = await pull(ctx, 'g', null);
    await push(ctx, 'g', [mutation('c', 2, 'put', { key: 'k', value: 2 })]);
    await pull(ctx, 'g', cookie);
    const [first, second] = sdk.spans('viewsync pull');
    expect(first!.attributes['viewsync.pull.reset']).toBe(true);
    expect(second!.attributes).toMatchObject({ 'viewsync.pull.reset': false, 'viewsync.pull.patch.operations': 1 });
    const durations = await sdk.points<Histogram>('viewsync.pull.duration');
    expect(durations.map((point) => [point.attributes, point.value.count])).toEqual([
      [{ 'viewsync.outcome': 'ok', 'viewsync.pull.reset': true }, 1],
      [{ 'viewsync.outcome': 'ok', 'viewsync.pull.reset': false }, 1],
    ]);
  });

  it('with a schema, pulls and pushes are counted by the schema version they sync with, and only a served one is named', async () => {
    const ctx = testContext({ schema: { current: '2', older: [{ version: '1' }] } });
    for (const schemaVersion of ['1', '2', '2', 'forged-version']) {
      await handlePush(post('/push', pushBody('g', [], { schemaVersion })), ctx);
      await handlePull(post('/pull', pullBody('g', null, { schemaVersion })), ctx);
    }
    for (const name of ['viewsync.pull.duration', 'viewsync.push.duration']) {
      const durations = await sdk.points<Histogram>(name);
      expect(
        durations.map((point) => [point.attributes['viewsync.schema_version'], point.attributes['viewsync.outcome'], point.value.count]).sort(),
        name,
      ).toEqual([
        [undefined, 'VersionNotSupported', 1],
        ['1', 'ok', 1],
        ['2', 'ok', 2],
      ]);
    }
  });

  it('a pull of version 0 names its client', async () => {
    const ctx = testContext();
    await handlePull(post('/pull', { pullVersion: 0, clientID: 'c0', cookie: null, lastMutationID: 0, profileID: 'p', schemaVersion: '' }), ctx);
    expect(only('viewsync pull').attributes).toMatchObject({ 'viewsync.client_id': 'c0', 'viewsync.outcome': 'ok' });
  });

  it('ClientStateNotFound is its outcome', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const { cookie } = await pull(ctx, 'g', null);
    const ahead = { ...(cookie as object), order: (cookie as { order: number }).order + 1 };
    expect(await (await handlePull(post('/pull', pullBody('g', ahead)), ctx)).json()).toEqual({ error: 'ClientStateNotFound' });
    expect(sdk.spans('viewsync pull')[1]!.attributes).toMatchObject({ 'viewsync.outcome': 'ClientStateNotFound', 'http.response.status_code': 200 });
  });

  it('VersionNotSupported is its outcome', async () => {
    const response = await handlePull(post('/pull', pullBody('g', null, { pullVersion: 9 })), testContext());
    expect(await response.json()).toMatchObject({ error: 'VersionNotSupported' });
    expect(only('viewsync pull').attributes).toMatchObject({ 'viewsync.outcome': 'VersionNotSupported' });
    const [point] = await sdk.points<Histogram>('viewsync.pull.duration');
    expect(point!.attributes).toEqual({ 'viewsync.outcome': 'VersionNotSupported' });
  });

  it('a bad request is a 4xx outcome, not an error of the server', async () => {
    const response = await handlePull(post('/pull', '{"pullVersion":1,'), testContext());
    expect(response.status).toBe(400);
    const span = only('viewsync pull');
    expect(span.attributes).toMatchObject({ 'viewsync.outcome': 'BadRequest', 'http.response.status_code': 400 });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    expect(span.events).toEqual([]);
  });

  it('a store that throws makes a 500 with the error recorded on the span', async () => {
    const storage = memoryStorage();
    const ctx = testContext({ storage: { ...storage, transaction: () => Promise.reject(new RangeError('disk on fire')) } });
    const response = await handlePull(post('/pull', pullBody('g', null)), ctx);
    expect(response.status).toBe(500);
    const span = only('viewsync pull');
    expect(span.attributes).toMatchObject({ 'viewsync.outcome': 'InternalServerError', 'http.response.status_code': 500 });
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.events.map((event) => [event.name, event.attributes?.['exception.type'], event.attributes?.['exception.message']])).toEqual([
      ['exception', 'RangeError', 'disk on fire'],
    ]);
  });

  it('a streamed answer counts its bytes once the body is read', async () => {
    const ctx = testContext();
    const big = 'x'.repeat(100_000);
    await push(
      ctx,
      'g',
      Array.from({ length: 20 }, (_, i) => mutation('c', i + 1, 'put', { key: `k${i}`, value: big })),
    );
    const response = await handlePull(post('/pull', pullBody('g', null)), ctx);
    expect(only('viewsync pull').attributes).toMatchObject({ 'viewsync.pull.streamed': true, 'viewsync.pull.patch.operations': 21 });
    expect(await sdk.points<Histogram>('viewsync.pull.body.size')).toEqual([]);
    const bytes = (await response.arrayBuffer()).byteLength;
    expect(bytes).toBeGreaterThan(2_000_000);
    const [point] = await sdk.points<Histogram>('viewsync.pull.body.size');
    expect(point!.value).toMatchObject({ count: 1, sum: bytes });
  });

  it('a reset read as it is sent counts its operations once the body is read, the pages included', async () => {
    const ctx = testContext({
      mutators: {
        ...testMutators,
        fill: async (tx) => {
          for (let i = 0; i < 20_000; i++) await tx.set(`k${i}`, i);
        },
      },
    });
    await push(ctx, 'g', [mutation('c', 1, 'fill')]);
    const response = await handlePull(post('/pull', pullBody('g', null)), ctx);
    expect(only('viewsync pull').attributes).toMatchObject({ 'viewsync.pull.reset': true, 'viewsync.pull.streamed': true });
    expect(await sdk.points<Histogram>('viewsync.pull.patch.operations')).toEqual([]);
    expect(JSON.parse(await response.text()).patch).toHaveLength(20_001);
    const [point] = await sdk.points<Histogram>('viewsync.pull.patch.operations');
    expect(point!.value).toMatchObject({ count: 1, sum: 20_001 });
  });
});

describe('the push span', () => {
  it('is named `viewsync push` and counts the mutations processed, failed and skipped', async () => {
    const ctx = testContext({ space: () => 's' });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const mutations = [
      mutation('c', 1, 'put', { key: 'a', value: 1 }),
      mutation('c', 2, 'put', { key: 'b', value: 2 }),
      mutation('c', 3, 'putThenFail', { key: 'x', value: 0 }),
      mutation('c', 4, 'no such mutator'),
    ];
    await push(ctx, 'g', mutations, { 'x-replicache-requestid': 'c-1-1' });
    const span = sdk.spans('viewsync push')[1]!;
    expect(span.attributes).toMatchObject({
      'viewsync.request_id': 'c-1-1',
      'viewsync.space': 's',
      'viewsync.client_group_id': 'g',
      'viewsync.push.mutations': 4,
      'viewsync.push.mutations.processed': 1,
      'viewsync.push.mutations.failed': 2,
      'viewsync.push.mutations.skipped': 1,
      'viewsync.push.group_size': 1,
      'viewsync.outcome': 'ok',
      'http.response.status_code': 200,
    });
    expect(span.attributes['viewsync.push.queue_wait']).toBeGreaterThanOrEqual(0);
    // One event per failed mutation, with the error's type: never its message, args or keys.
    expect(span.events.map(({ name, attributes }) => [name, attributes])).toEqual([
      ['viewsync.mutation.failed', { 'viewsync.mutator': 'putThenFail', 'viewsync.mutation.id': 3, 'error.type': 'Error' }],
      ['viewsync.mutation.failed', { 'viewsync.mutator': UNKNOWN_MUTATOR, 'viewsync.mutation.id': 4, 'error.type': 'UnknownMutatorError' }],
    ]);
  });

  it('counts mutations by mutator and result, with every unknown name in one bucket', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [
      mutation('c', 1, 'put', { key: 'a', value: 1 }),
      mutation('c', 2, 'put', { key: 'b', value: 1 }),
      mutation('c', 3, 'putThenFail', { key: 'x', value: 0 }),
      mutation('c', 4, 'nope-1'),
      mutation('c', 5, 'nope-2'),
      mutation('c', 6, 'toString'),
    ]);
    await push(ctx, 'g', [mutation('c', 2, 'put', { key: 'b', value: 1 })]);
    const points = await sdk.points('viewsync.push.mutations');
    const counts = Object.fromEntries(
      points.map(({ attributes, value }) => [`${attributes['viewsync.mutator']} ${attributes['viewsync.mutation.result']}`, value]),
    );
    expect(counts).toEqual({ 'put processed': 2, 'putThenFail failed': 1, [`${UNKNOWN_MUTATOR} failed`]: 3, 'put skipped': 1 });
  });

  it('a TemporaryError is its outcome, with a 503 marked as an error', async () => {
    const ctx = testContext();
    const response = await handlePush(
      post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('c', 2, 'putThenTemporary', { key: 'b', value: 1 })])),
      ctx,
    );
    expect(response.status).toBe(503);
    const span = only('viewsync push');
    expect(span.attributes).toMatchObject({
      'viewsync.outcome': 'TemporaryError',
      'viewsync.push.mutations.processed': 1,
      'viewsync.push.mutations.failed': 1,
      'http.response.status_code': 503,
    });
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    const [point] = await sdk.points<Histogram>('viewsync.push.duration');
    expect(point!.attributes).toEqual({ 'viewsync.outcome': 'TemporaryError' });
  });

  it('ClientStateNotFound and VersionNotSupported are its outcomes', async () => {
    const ctx = testContext();
    expect(await (await handlePush(post('/push', pushBody('g', [mutation('c', 5, 'put', { key: 'a', value: 1 })])), ctx)).json()).toEqual({
      error: 'ClientStateNotFound',
    });
    expect(await (await handlePush(post('/push', pushBody('g', [], { pushVersion: 7 })), ctx)).json()).toMatchObject({ error: 'VersionNotSupported' });
    expect(sdk.spans('viewsync push').map((span) => span.attributes['viewsync.outcome'])).toEqual(['ClientStateNotFound', 'VersionNotSupported']);
    const points = await sdk.points<Histogram>('viewsync.push.duration');
    expect(points.map((point) => point.attributes['viewsync.outcome']).sort()).toEqual(['ClientStateNotFound', 'VersionNotSupported']);
  });

  it('a 401 and a store failure are outcomes too; only the 5xx is an error', async () => {
    const refuse = testContext({ authenticate: () => null });
    expect((await handlePush(post('/push', pushBody('g', [])), refuse)).status).toBe(401);
    const broken = testContext({ storage: { ...memoryStorage(), transaction: () => Promise.reject(new Error('gone')) } });
    expect((await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 })])), broken)).status).toBe(500);
    const [refused, failed] = sdk.spans('viewsync push');
    expect([refused!.attributes['viewsync.outcome'], refused!.status.code]).toEqual(['Unauthorized', SpanStatusCode.UNSET]);
    expect([failed!.attributes['viewsync.outcome'], failed!.status.code, failed!.events[0]?.name]).toEqual([
      'InternalServerError',
      SpanStatusCode.ERROR,
      'exception',
    ]);
  });

  it('pushes that queue behind a running one share a transaction: the group-commit size and wait', async () => {
    const first = gate();
    const ctx = testContext({ mutators: { ...testMutators, hold: first.hold } });
    const held = handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'hold')])), ctx);
    await first.started;
    const queued = [1, 2, 3].map((i) => handlePush(post('/push', pushBody(`g${i}`, [mutation(`c${i}`, 1, 'put', { key: `k${i}`, value: i })])), ctx));
    // Long enough for the three to be read, checked and queued, however busy the machine.
    await new Promise((resolve) => setTimeout(resolve, 150));
    first.release();
    expect((await Promise.all([held, ...queued])).map((response) => response.status)).toEqual([200, 200, 200, 200]);

    const [size] = await sdk.points<Histogram>('viewsync.group_commit.size');
    expect(size!.value).toMatchObject({ count: 2, sum: 4, min: 1, max: 3 });
    const [wait] = await sdk.points<Histogram>('viewsync.group_commit.wait');
    expect(wait!.value.count).toBe(4);
    expect(wait!.value.max).toBeGreaterThanOrEqual(0.02);
    const groups = sdk.spans('viewsync push').map((span) => [span.attributes['viewsync.client_group_id'], span.attributes['viewsync.push.group_size']]);
    expect(groups.sort()).toEqual([
      ['g0', 1],
      ['g1', 3],
      ['g2', 3],
      ['g3', 3],
    ]);
    const waited = sdk.spans('viewsync push').find((span) => span.attributes['viewsync.client_group_id'] === 'g3')!;
    expect(waited.attributes['viewsync.push.queue_wait']).toBeGreaterThanOrEqual(0.02);
  });
});

describe('poke streams', () => {
  it('the open-stream count goes up when a stream opens and down when its reader cancels', async () => {
    const ctx: SyncContext = testContext();
    const total = async () => (await sdk.points('viewsync.poke.streams')).reduce((sum, point) => sum + point.value, 0);
    const a = await handlePoke(new Request('http://localhost/poke'), ctx);
    const b = await handlePoke(new Request('http://localhost/poke'), ctx);
    expect(await total()).toBe(2);
    await a.body!.cancel();
    expect(await total()).toBe(1);
    await b.body!.cancel();
    expect(await total()).toBe(0);
  });
});

describe('the instrumentation scope', () => {
  it("is named viewsync with the package's version", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
  });
});
