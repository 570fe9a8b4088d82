/**
 * The context is made once, by createContext, and checked there: a plain object (one made per
 * request, as a fetch handler might) is refused by every call, so no rate, drain, stream cap or
 * housekeeping schedule can be lost with it quietly; and every option family is checked when the
 * context is made, naming the field.
 */
import { describe, expect, it } from 'vitest';
import { serve } from '../../adapters/node.js';
import { createContext, handlePoke, handlePull, handlePush, handleRequest, memoryStorage, type SyncContext, type SyncOptions } from '../../src/index.js';
import { mutate, read, transact } from '../../src/backend.js';
import { checkHealth, collectGarbage, drain, exportSpace, importSpace, inspect, moveSpace } from '../../src/ops.js';
import { mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';

const NOT_A_CONTEXT = /not a context made by createContext\(\).*Make it once, at startup/s;
const storage = memoryStorage();
const plain = () => ({ storage, mutators: testMutators, rates: { pushesPerSecond: 1 }, onError: () => {} }) as unknown as SyncContext;

describe('the context, made once', () => {
  it('five pushes at 1 a second: 200 then 429s with one context; a new literal per request is refused at once, never served unlimited', async () => {
    const ctx = createContext({ storage: memoryStorage(), mutators: testMutators, rates: { pushesPerSecond: 1 }, onError: () => {} });
    const statuses: number[] = [];
    for (let id = 1; id <= 5; id++)
      statuses.push((await handlePush(post('/push', pushBody('g', [mutation('c', id, 'put', { key: 'k', value: id })])), ctx)).status);
    expect(statuses).toEqual([200, 429, 429, 429, 429]);

    for (let id = 1; id <= 5; id++) {
      await expect(handlePush(post('/push', pushBody('g', [mutation('c', id, 'put', { key: 'k', value: id })])), plain())).rejects.toThrow(NOT_A_CONTEXT);
    }
  });

  it('every handler, adapter and backend call refuses a plain object, and a spread of a context, saying what to do', async () => {
    const ctx = createContext({ storage: memoryStorage(), mutators: testMutators });
    for (const notOne of [plain(), { ...ctx } as SyncContext]) {
      await expect(handlePull(post('/pull', pullBody('g', null)), notOne)).rejects.toThrow(NOT_A_CONTEXT);
      await expect(handlePush(post('/push', pushBody('g', [])), notOne)).rejects.toThrow(NOT_A_CONTEXT);
      await expect(handlePoke(new Request('http://localhost/poke'), notOne)).rejects.toThrow(NOT_A_CONTEXT);
      await expect(handleRequest(new Request('http://localhost/pull', { method: 'POST' }), notOne)).rejects.toThrow(NOT_A_CONTEXT);
      await expect(transact(notOne, '', () => {})).rejects.toThrow(NOT_A_CONTEXT);
      await expect(mutate(notOne, '', 'put', { key: 'k', value: 1 })).rejects.toThrow(NOT_A_CONTEXT);
      await expect(read(notOne, '', () => {})).rejects.toThrow(NOT_A_CONTEXT);
      expect(() => exportSpace(notOne, '')).toThrow(NOT_A_CONTEXT);
      await expect(importSpace(notOne, '', [''], { mode: 'merge' })).rejects.toThrow(NOT_A_CONTEXT);
      await expect(inspect(notOne)).rejects.toThrow(NOT_A_CONTEXT);
      await expect(collectGarbage(notOne)).rejects.toThrow(NOT_A_CONTEXT);
      await expect(checkHealth(notOne)).rejects.toThrow(NOT_A_CONTEXT);
      await expect(moveSpace(notOne, '', 'b')).rejects.toThrow(NOT_A_CONTEXT);
      expect(() => drain(notOne)).toThrow(NOT_A_CONTEXT);
      await expect((async () => serve(notOne, { port: 0 }))()).rejects.toThrow(NOT_A_CONTEXT);
    }
  });

  it('reads as its options, keeps them in ctx.options, and a variant made from them has state of its own', async () => {
    const options: SyncOptions = { storage: memoryStorage(), mutators: testMutators, rates: { pushesPerSecond: 1 }, onError: () => {} };
    const ctx = createContext(options);
    expect(ctx.storage).toBe(options.storage);
    // Resolved: every default filled in.
    expect(ctx.rates).toEqual({ pushesPerSecond: 1, burstMs: 1_000, bucketsKept: 100_000 });
    expect(ctx.options).toEqual(options);
    // Set once: an assignment throws rather than leaving the state behind.
    expect(() => ((ctx as { rates?: object }).rates = {})).toThrow(TypeError);
    const variant = createContext({ ...ctx.options, shareReads: false });
    const push = (context: SyncContext, id: number) => handlePush(post('/push', pushBody('g', [mutation('c', id, 'put', { key: 'k', value: id })])), context);
    expect((await push(ctx, 1)).status).toBe(200);
    expect((await push(variant, 2)).status).toBe(200);
    expect((await push(ctx, 3)).status).toBe(429);
  });
});

describe('every option is checked when the context is made', () => {
  const base = (): SyncOptions => ({ storage: memoryStorage(), mutators: testMutators });
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['an unknown option', { storgae: 1 }, /^storgae is not an option \(did you mean storage\?\); the options are storage, mutators/],
    ['no store', { storage: undefined }, /^storage must be a store/],
    ['a mutator that is not a function', { mutators: { put: 'put' } }, /^mutators\.put must be a function/],
    ['authenticate', { authenticate: 'token' }, /^authenticate must be a function, got "token"/],
    ['space', { space: 'main' }, /^space must be a function/],
    ['view', { view: ['a/'] }, /^view must be a function, got an array/],
    ['onError', { onError: console }, /^onError must be a function, got an object/],
    ['clock', { clock: 0 }, /^clock must be a function, got 0/],
    ['schemaVersion', { schemaVersion: 3 }, /^schemaVersion must be a string, a list of strings or a function, got 3/],
    ['transactionPerMutation', { transactionPerMutation: 'yes' }, /^transactionPerMutation must be true or false/],
    ['shareReads', { shareReads: 1 }, /^shareReads must be true or false/],
    ['limits: a typo', { limits: { bodySize: 1 } }, /^limits\.bodySize is not an option of limits \(did you mean bodyBytes\?\); the options are bodyBytes/],
    ['limits: a wrong unit', { limits: { bodyBytes: '1mb' } }, /^limits\.bodyBytes must be a whole number above 0, got "1mb"/],
    ['limits: a renamed one', { limits: { mutatorMs: 5_000 } }, /^limits\.mutatorMs was renamed limits\.appCodeMs/],
    ['quotas: a typo', { quotas: { entry: 10 } }, /^quotas\.entry is not an option of quotas \(did you mean entries\?\)/],
    ['quotas: below 0', { quotas: { bytes: -1 } }, /^quotas\.bytes must be a number of at least 0, got -1/],
    ['rates: a typo', { rates: { pushPerSecond: 1 } }, /^rates\.pushPerSecond is not an option/],
    ['rates: 0', { rates: { pullsPerSecond: 0 } }, /^rates\.pullsPerSecond must be a number above 0/],
    ['retention: a renamed one', { retention: { tombstones: 30 } }, /^retention\.tombstones was renamed retention\.tombstonesMs/],
    ['retention: a wrong type', { retention: { clientGroupsMs: '30d' } }, /^retention\.clientGroupsMs must be milliseconds above 0, or false/],
    ['pokes: a typo', { pokes: { heartbeat: 1_000 } }, /^pokes\.heartbeat is not an option of pokes \(did you mean heartbeatMs\?\)/],
    ['pokes: a wrong number', { pokes: { maxStreams: 0 } }, /^pokes\.maxStreams must be a whole number above 0, got 0/],
    ['pokes: not a notifier', { pokes: { notifier: {} } }, /^pokes\.notifier must be a notifier/],
    ['pokes: true', { pokes: true }, /^pokes must be an object, or false to serve none, got true/],
    ['cors: a renamed one', { cors: { origin: '*', maxAge: 600 } }, /^cors\.maxAge was renamed cors\.maxAgeMs/],
    ['cors: a wrong origin', { cors: { origin: 'https://app.example' } }, /^cors\.origin must be '\*', a list of origins or a function/],
    ['cors: a typo', { cors: { origin: '*', maxAgeMS: 1 } }, /^cors\.maxAgeMS is not an option of cors \(did you mean maxAgeMs\?\)/],
  ];
  for (const [what, options, message] of cases) {
    it(`${what}: ${JSON.stringify(options)}`, () => {
      expect(() => createContext({ ...base(), ...options } as SyncOptions)).toThrow(message);
    });
  }

  it('well-formed options of every family are taken', () => {
    const ctx = createContext({
      ...base(),
      authenticate: () => null,
      space: () => 'a',
      view: () => ['a/'],
      onError: () => {},
      clock: Date.now,
      schemaVersion: ['1', '2'],
      transactionPerMutation: true,
      shareReads: false,
      limits: { bodyBytes: 1_000_000, appCodeMs: 5_000 },
      quotas: (space) => (space === 'a' ? { entries: 10 } : undefined),
      rates: { pushesPerSecond: 5, burstMs: 2_000 },
      retention: { clientGroupsMs: false, tombstonesMs: 60_000 },
      pokes: { heartbeatMs: 10_000, coalesceMs: 0, maxStreams: 100, maxStreamsPerUser: 5, maxStreamAgeMs: 60_000 },
      cors: { origin: ['https://app.example'], maxAgeMs: 0 },
    });
    expect(ctx.options.limits).toEqual({ bodyBytes: 1_000_000, appCodeMs: 5_000 });
    expect(createContext({ ...base(), pokes: false, cors: false }).pokes).toBe(false);
  });
});
