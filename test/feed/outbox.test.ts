/**
 * The outbox: `emit` from a mutator puts an event in the change feed, committed with the
 * mutation's writes, exactly once, never for a mutation that failed, was refused or came again.
 */
import { describe, expect, it } from 'vitest';
import { emit as clientEmit } from '../../src/client/index.js';
import { emit, type Mutators, TemporaryError } from '../../src/index.js';
import { type FeedChange, readChanges, transact } from '../../src/backend.js';
import { handlePush } from '../../src/index.js';
import { mutation, post, push, pushBody, testContext, testMutators } from '../support/helpers.js';

const mutators: Mutators = {
  ...testMutators,
  assign: async (tx, { id, to }: { id: string; to: string }) => {
    await tx.set(`todo/${id}/assignee`, to);
    await emit(tx, 'todo.assigned', { id, to });
  },
  assignThenFail: async (tx, { id }: { id: string }) => {
    await emit(tx, 'todo.assigned', { id });
    throw new Error('refused after emitting');
  },
  assignThenRetry: async (tx, { id }: { id: string }) => {
    await emit(tx, 'todo.assigned', { id });
    throw new TemporaryError('later');
  },
  emitAny: async (tx, args) => {
    const { topic, payload } = args as { topic: string; payload: unknown };
    await emit(tx, topic, payload);
  },
};

const events = (changes: readonly FeedChange[]) =>
  changes.flatMap((change) =>
    change.op === 'event'
      ? [
          {
            version: change.version,
            topic: change.topic,
            payload: change.payload,
            by: change.by.kind === 'mutation' ? change.by.mutationID : change.by.kind === 'backend' ? change.by.call : change.by.kind,
          },
        ]
      : [],
  );

describe('emit', () => {
  it('commits the event with the mutation, after its writes, once, however often the push comes', async () => {
    const ctx = testContext({ mutators, changes: {} });
    const sent = [mutation('c1', 1, 'assign', { id: '1', to: 'bob' }), mutation('c1', 2, 'assign', { id: '2', to: 'eve' })];
    await push(ctx, 'g1', sent);
    // The client sends pending mutations again until a pull confirms them: skipped, no second event.
    await push(ctx, 'g1', sent);
    const { changes } = await readChanges(ctx, '');
    expect(changes.map((change) => (change.op === 'event' ? `event ${change.topic}` : `${change.op} ${change.key}`))).toEqual([
      'set todo/1/assignee',
      'event todo.assigned',
      'set todo/2/assignee',
      'event todo.assigned',
    ]);
    expect(events(changes)).toEqual([
      { version: 1, topic: 'todo.assigned', payload: { id: '1', to: 'bob' }, by: 1 },
      { version: 1, topic: 'todo.assigned', payload: { id: '2', to: 'eve' }, by: 2 },
    ]);
  });

  it('never for a mutation that failed, was over its quota, or was stopped by a temporary error', async () => {
    const ctx = testContext({ mutators, changes: {}, quotas: { entries: 1 } });
    await push(ctx, 'g1', [
      mutation('c1', 1, 'assignThenFail', { id: '1' }),
      mutation('c1', 2, 'assign', { id: '2', to: 'bob' }),
      mutation('c1', 3, 'assign', { id: '3', to: 'eve' }),
    ]);
    await handlePush(post('/push', pushBody('g1', [mutation('c1', 4, 'assignThenRetry', { id: '4' })])), ctx);
    // Mutation 3 was over the quota (one entry): refused, its event with it.
    expect(events((await readChanges(ctx, '')).changes)).toEqual([{ version: 1, topic: 'todo.assigned', payload: { id: '2', to: 'bob' }, by: 2 }]);
  });

  it('in one transaction per mutation too', async () => {
    const ctx = testContext({ mutators, changes: {}, transactionPerMutation: true });
    await push(ctx, 'g1', [
      mutation('c1', 1, 'assign', { id: '1', to: 'bob' }),
      mutation('c1', 2, 'assignThenFail', { id: '2' }),
      mutation('c1', 3, 'assign', { id: '3', to: 'eve' }),
    ]);
    expect(events((await readChanges(ctx, '')).changes).map(({ version, by }) => [version, by])).toEqual([
      [1, 1],
      [3, 3],
    ]);
  });

  it('from the backend: transact and mutate emit as the backend call', async () => {
    const ctx = testContext({ mutators, changes: {} });
    await transact(ctx, '', (tx) => emit(tx, 'nightly', { ran: true }));
    expect(events((await readChanges(ctx, '')).changes)).toEqual([{ version: 1, topic: 'nightly', payload: { ran: true }, by: 'transact' }]);
  });

  it('fails the mutation, saying why, when the feed is off: nothing of it is written', async () => {
    const ctx = testContext({ mutators });
    await push(ctx, 'g1', [mutation('c1', 1, 'assign', { id: '1', to: 'bob' })]);
    expect(String(ctx.errors[0])).toMatch(
      /emit: events go out through the change feed, which is off on this server: turn it on with the context option `changes`/,
    );
    await expect(transact(ctx, '', (tx) => tx.get('todo/1/assignee'))).resolves.toBeUndefined();
  });

  it('refuses a bad topic or a payload over limits.valueBytes, failing only that mutation', async () => {
    const ctx = testContext({ mutators, changes: {}, limits: { valueBytes: 100 } });
    const bad = [{ topic: '' }, { topic: 'x'.repeat(257) }, { topic: 7 }, { topic: 'big', payload: 'x'.repeat(200) }, { topic: 'none', payload: undefined }];
    await push(ctx, 'g1', [
      ...bad.map((args, i) => mutation('c1', i + 1, 'emitAny', args)),
      mutation('c1', bad.length + 1, 'emitAny', { topic: 'fine', payload: 1 }),
    ]);
    expect(ctx.errors).toHaveLength(bad.length);
    expect(events((await readChanges(ctx, '')).changes).map(({ topic }) => topic)).toEqual(['fine']);
  });

  it("does nothing in the client's transaction, so one mutator source runs on both", async () => {
    const clientTx = { clientID: 'c1', mutationID: 1, reason: 'initial', location: 'client', set: async () => {} };
    await expect(clientEmit(clientTx, 'todo.assigned', {})).resolves.toBeUndefined();
    expect(clientEmit).toBe(emit);
  });
});
