/**
 * How a push ended (src/sync/process-push.ts), as the tagged value `processPush` resolves with:
 * never a thrown refusal, and, with a transaction per mutation, the totals of what was committed
 * before it ended.
 */
import { describe, expect, it } from 'vitest';
import { type JSONValue, memoryStorage } from '../../src/index.js';
import { processPush, type PushOptions } from '../../src/sync/process-push.js';
import { testMutators } from '../support/helpers.js';

const CLOCK = { now: 1_000, touchEveryMs: 60_000 };
const LIMITS = { keyBytes: 1024, valueBytes: 65_536, appCodeMs: 10_000 };

function options(perMutation: boolean): PushOptions {
  return { space: '', userID: undefined, limits: LIMITS, perMutation, clock: CLOCK };
}

function pushOf(clientGroupID: string, mutations: Array<[clientID: string, id: number, name: string, args: JSONValue]>) {
  return {
    pushVersion: 1 as const,
    clientGroupID,
    profileID: 'p',
    schemaVersion: '',
    mutations: mutations.map(([clientID, id, name, args]) => ({ clientID, id, name, args, timestamp: 0 })),
  };
}

describe('processPush', () => {
  it('applied: every mutation processed, failed for good or skipped', async () => {
    const storage = memoryStorage();
    const outcome = await processPush(
      storage,
      testMutators,
      pushOf('g', [
        ['c', 1, 'put', { key: 'a', value: 1 }],
        ['c', 2, 'putThenFail', { key: 'b', value: 1 }],
      ]),
      options(false),
    );
    expect(outcome).toMatchObject({
      kind: 'applied',
      changed: true,
      touched: ['a'],
      tally: new Map([
        ['put', { processed: 1, failed: 0, skipped: 0 }],
        ['putThenFail', { processed: 0, failed: 1, skipped: 0 }],
      ]),
    });
    expect(outcome.failures.map(({ mutation }) => mutation.id)).toEqual([2]);
  });

  it('stopped: a TemporaryError stops it, and it names the error', async () => {
    const outcome = await processPush(
      memoryStorage(),
      testMutators,
      pushOf('g', [
        ['c', 1, 'put', { key: 'a', value: 1 }],
        ['c', 2, 'putThenTemporary', { key: 'b', value: 1 }],
        ['c', 3, 'put', { key: 'c', value: 1 }],
      ]),
      options(false),
    );
    expect(outcome.kind).toBe('stopped');
    expect(outcome.kind === 'stopped' && outcome.stoppedBy.message).toBe('try again later');
    expect(outcome.tally).toEqual(
      new Map([
        ['put', { processed: 1, failed: 0, skipped: 0 }],
        ['putThenTemporary', { processed: 0, failed: 1, skipped: 0 }],
      ]),
    );
  });

  it('lost: a mutation past what the store has ends it, keeping the batches committed before', async () => {
    const outcome = await processPush(
      memoryStorage(),
      testMutators,
      pushOf('g', [
        ['c', 1, 'put', { key: 'a', value: 1 }],
        ['c', 3, 'put', { key: 'b', value: 1 }],
      ]),
      options(true),
    );
    expect(outcome).toMatchObject({ kind: 'lost', changed: true, touched: ['a'], tally: new Map([['put', { processed: 1, failed: 0, skipped: 0 }]]) });
  });

  it('refused: a client of another group is returned as a 400, not thrown, keeping the batches committed before', async () => {
    const storage = memoryStorage();
    expect((await processPush(storage, testMutators, pushOf('g1', [['c', 1, 'put', { key: 'a', value: 1 }]]), options(false))).kind).toBe('applied');
    const outcome = await processPush(
      storage,
      testMutators,
      pushOf('g2', [
        ['d', 1, 'put', { key: 'b', value: 1 }],
        ['c', 2, 'put', { key: 'c', value: 1 }],
      ]),
      options(true),
    );
    expect(outcome).toMatchObject({ kind: 'refused', changed: true, touched: ['b'], tally: new Map([['put', { processed: 1, failed: 0, skipped: 0 }]]) });
    expect(outcome.kind === 'refused' && [outcome.error.status, outcome.error.message]).toEqual([
      400,
      'mutations.1: client "c" belongs to another of your client groups',
    ]);
  });
});
