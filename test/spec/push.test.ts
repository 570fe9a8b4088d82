import { describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { z } from 'zod';
import { defineMutator, handlePush, InvalidArgsError, memoryStorage, type Storage, TemporaryError, UnknownMutatorError } from '../../src/index.js';
import { mutation, post, pull, push, pushBody, serverView, testContext, testMutators, versionOf } from '../support/helpers.js';

const lmids = async (ctx: ReturnType<typeof testContext>, group = 'g') => (await pull(ctx, group, null)).lastMutationIDChanges;

describe('push rules 2, 3, 4 and 8, States: mutations in order, each exactly once, with the client record', () => {
  it('applies mutations in order and records the last id per client', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [
      mutation('c', 1, 'put', { key: 'n', value: 10 }),
      mutation('c', 2, 'increment', { key: 'n', delta: 5 }),
      mutation('c', 3, 'increment', { key: 'n', delta: -2 }),
    ]);
    expect(await serverView(ctx)).toEqual(new Map([['n', 13]]));
    expect(await lmids(ctx)).toEqual({ c: 3 });
  });

  it('skips ids at or below lastMutationID: the client re-sends everything pending', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'increment', { key: 'n', delta: 1 }), mutation('c', 2, 'increment', { key: 'n', delta: 1 })]);
    await push(ctx, 'g', [
      mutation('c', 1, 'increment', { key: 'n', delta: 1 }),
      mutation('c', 2, 'increment', { key: 'n', delta: 1 }),
      mutation('c', 3, 'increment', { key: 'n', delta: 1 }),
    ]);
    expect(await serverView(ctx)).toEqual(new Map([['n', 3]]));
    expect(await lmids(ctx)).toEqual({ c: 3 });
  });

  it('applies no id above lastMutationID + 1 (a gap): the client saw acknowledged what the store lost, so it is told ClientStateNotFound, and nothing of the push is committed', async () => {
    // The spec ignores such a mutation (push rule 3). A client sends from the last id it saw
    // acknowledged, so a gap means a restore or a failover lost what it was told: ignoring it
    // would block the client for ever, or hide the loss; it starts a new group instead.
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const response = await handlePush(
      post(
        '/push',
        pushBody('g', [
          mutation('other', 1, 'put', { key: 'x', value: 1 }),
          mutation('c', 3, 'put', { key: 'b', value: 1 }),
          mutation('c', 4, 'put', { key: 'c', value: 1 }),
        ]),
      ),
      ctx,
    );
    expect([response.status, await response.json()]).toEqual([200, { error: 'ClientStateNotFound' }]);
    expect(await serverView(ctx)).toEqual(new Map([['a', 1]]));
    expect(await lmids(ctx)).toEqual({ c: 1 });
  });

  it('an unknown client past id 1 means the server lost its state: ClientStateNotFound, nothing committed', async () => {
    // A client numbers from 1 and re-sends from its last acknowledged id: ignoring these (a gap)
    // would leave it unable to push ever again after a wiped store.
    const ctx = testContext();
    await push(ctx, 'g', [mutation('known', 1, 'put', { key: 'a', value: 1 })]);
    const before = await pull(ctx, 'g', null);
    const response = await handlePush(
      post('/push', pushBody('g', [mutation('known', 2, 'put', { key: 'a', value: 2 }), mutation('lost', 7, 'put', { key: 'b', value: 1 })])),
      ctx,
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ error: 'ClientStateNotFound' });
    expect(await pull(ctx, 'g', null)).toEqual(before);
  });

  it('handles several clients of one group (tabs) in one push, each with its own sequence', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [
      mutation('tab1', 1, 'put', { key: 'a', value: 1 }),
      mutation('tab2', 1, 'put', { key: 'b', value: 1 }),
      mutation('tab1', 2, 'put', { key: 'a', value: 2 }),
      mutation('tab2', 2, 'put', { key: 'b', value: 3 }),
    ]);
    expect(await serverView(ctx)).toEqual(
      new Map([
        ['a', 2],
        ['b', 3],
      ]),
    );
    expect(await lmids(ctx)).toEqual({ tab1: 2, tab2: 2 });
  });

  it('creates a client record at 0 on its first push, tied to its group', async () => {
    const ctx = testContext();
    // The first mutation waits (a temporary error), so the record exists with nothing processed.
    const first = await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'putThenTemporary', { key: 'a', value: 1 })])), ctx);
    expect(first.status).toBe(503);
    expect(await lmids(ctx)).toEqual({ c: 0 });
    const response = await handlePush(post('/push', pushBody('other', [mutation('c', 1, 'put', { key: 'a', value: 1 })])), ctx);
    expect(response.status).toBe(400);
    expect((await response.json()).message).toMatch(/client "c" belongs to another of your client groups/);
  });

  it('a client of another group anywhere in a push rejects the whole push, changing nothing', async () => {
    const ctx = testContext();
    await push(ctx, 'g1', [mutation('a', 1, 'put', { key: 'x', value: 1 })]);
    const before = await pull(ctx, 'g2', null);
    const response = await handlePush(
      post('/push', pushBody('g2', [mutation('b', 1, 'put', { key: 'y', value: 1 }), mutation('a', 2, 'put', { key: 'x', value: 2 })])),
      ctx,
    );
    expect(response.status).toBe(400);
    expect(await pull(ctx, 'g2', null)).toEqual(before);
  });

  it("a mutation's effects and its lastMutationID commit together: a failing store commits neither", async () => {
    const inner = memoryStorage();
    let fail = false;
    const storage: Storage = {
      transaction: (fn, options) =>
        inner.transaction(async (tx) => {
          const result = await fn(tx);
          if (fail) throw new Error('disk full');
          return result;
        }, options),
    };
    const ctx = testContext({ storage });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    fail = true;
    const response = await handlePush(post('/push', pushBody('g', [mutation('c', 2, 'put', { key: 'a', value: 2 })])), ctx);
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ error: 'InternalServerError' });
    fail = false;
    expect(await serverView(ctx)).toEqual(new Map([['a', 1]]));
    expect(await lmids(ctx)).toEqual({ c: 1 });
    expect(ctx.errors).toHaveLength(1);
  });
  it("a store that fails while a mutation's writes are applied fails the push (500, nothing committed), never skips the mutation", async () => {
    const inner = memoryStorage();
    let fail = false;
    const storage: Storage = {
      transaction: (fn, options) =>
        inner.transaction(
          (tx) =>
            fn({
              ...tx,
              get: tx.get,
              scan: tx.scan,
              del: tx.del,
              put: (key, value) => (fail && key.startsWith('e/') ? Promise.reject(new Error('disk full')) : tx.put(key, value)),
            }),
          options,
        ),
    };
    const ctx = testContext({ storage });
    fail = true;
    const response = await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 })])), ctx);
    expect(response.status).toBe(500);
    fail = false;
    expect(await lmids(ctx)).toEqual({});
    // The client re-sends it, and this time it applies.
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    expect(await serverView(ctx)).toEqual(new Map([['a', 1]]));
  });
});

describe("push rule 6: a permanent error discards all of a mutation's writes, and it still counts", () => {
  it('a throwing mutator inside a batch leaves no write, while the mutations around it apply', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [
      mutation('c', 1, 'put', { key: 'a', value: 1 }),
      mutation('c', 2, 'putThenFail', { key: 'b', value: 'must not exist' }),
      mutation('c', 3, 'put', { key: 'c', value: 3 }),
    ]);
    expect(await serverView(ctx)).toEqual(
      new Map([
        ['a', 1],
        ['c', 3],
      ]),
    );
    expect(await lmids(ctx)).toEqual({ c: 3 });
    expect(ctx.errors).toEqual([expect.objectContaining({ message: 'permanent failure after a write' })]);
  });

  it("a failing mutator's deletes are discarded too", async () => {
    const ctx = testContext({
      mutators: { ...testMutators, delThenFail: async (tx, { key }: { key: string }) => (await tx.del(key), Promise.reject(new Error('no'))) },
    });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('c', 2, 'delThenFail', { key: 'a' })]);
    expect(await serverView(ctx)).toEqual(new Map([['a', 1]]));
  });

  it('an unknown mutator name (including inherited names like "constructor") is skipped and does not block the next ones', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [
      mutation('c', 1, 'noSuchMutator', {}),
      mutation('c', 2, 'constructor', {}),
      mutation('c', 3, '__proto__', {}),
      mutation('c', 4, 'put', { key: 'a', value: 1 }),
    ]);
    expect(await serverView(ctx)).toEqual(new Map([['a', 1]]));
    expect(await lmids(ctx)).toEqual({ c: 4 });
    expect(ctx.errors.map((e) => (e as Error).constructor)).toEqual([UnknownMutatorError, UnknownMutatorError, UnknownMutatorError]);
  });

  it("args that fail a typed mutator's schema are a permanent error before the mutator runs", async () => {
    let ran = 0;
    const ctx = testContext({
      mutators: {
        setCount: defineMutator(v.object({ key: v.string(), count: v.pipe(v.number(), v.integer()) }), async (tx, { key, count }) => {
          ran++;
          await tx.set(key, count);
        }),
      },
    });
    await push(ctx, 'g', [
      mutation('c', 1, 'setCount', { key: 'a', count: 1.5 }),
      mutation('c', 2, 'setCount', { key: 'a' }),
      mutation('c', 3, 'setCount', { key: 'a', count: 2 }),
    ]);
    expect(ran).toBe(1);
    expect(await serverView(ctx)).toEqual(new Map([['a', 2]]));
    expect(await lmids(ctx)).toEqual({ c: 3 });
    expect(ctx.errors).toHaveLength(2);
    expect(ctx.errors[0]).toBeInstanceOf(InvalidArgsError);
    expect((ctx.errors[0] as Error).message).toMatch(/count/);
  });

  it("defineMutator takes any Standard Schema: a zod schema's output (transforms too) reaches the mutator typed, and args that fail it are the same permanent error", async () => {
    const seen: Array<{ key: string; length: number }> = [];
    const ctx = testContext({
      mutators: {
        setLength: defineMutator(z.object({ key: z.string(), text: z.string().transform((text) => text.length) }), async (tx, args) => {
          const typed: { key: string; text: number } = args;
          seen.push({ key: typed.key, length: typed.text });
          await tx.set(args.key, args.text);
        }),
      },
    });
    await push(ctx, 'g', [
      mutation('c', 1, 'setLength', { key: 'a', text: 'four' }),
      mutation('c', 2, 'setLength', { key: 'b', text: 7 }),
      mutation('c', 3, 'setLength', { key: 'c', text: 'xy' }),
    ]);
    expect(seen).toEqual([
      { key: 'a', length: 4 },
      { key: 'c', length: 2 },
    ]);
    expect(await serverView(ctx)).toEqual(
      new Map([
        ['a', 4],
        ['c', 2],
      ]),
    );
    expect(await lmids(ctx)).toEqual({ c: 3 });
    expect(ctx.errors).toHaveLength(1);
    expect(ctx.errors[0]).toBeInstanceOf(InvalidArgsError);
    expect((ctx.errors[0] as Error).message).toMatch(/string[\s\S]*→ at text/i);
    expect(() => defineMutator({} as never, () => {})).toThrow(/takes a Standard Schema/);
  });

  it('a mutator that sets a non-JSON value fails permanently and writes nothing', async () => {
    const ctx = testContext({
      mutators: {
        bad: async (tx) => {
          await tx.set('ok', 1);
          await tx.set('bad', { when: new Date() } as never);
        },
      },
    });
    await push(ctx, 'g', [mutation('c', 1, 'bad')]);
    expect(await serverView(ctx)).toEqual(new Map());
    expect(await lmids(ctx)).toEqual({ c: 1 });
  });
});

describe('push rule 7: a temporary error stops the push without advancing', () => {
  it('keeps the mutations before it, drops its writes, stops, and answers 503 with Retry-After', async () => {
    const ctx = testContext();
    const response = await handlePush(
      post(
        '/push',
        pushBody('g', [
          mutation('c', 1, 'put', { key: 'a', value: 1 }),
          mutation('c', 2, 'putThenTemporary', { key: 'b', value: 2 }),
          mutation('c', 3, 'put', { key: 'c', value: 3 }),
          mutation('d', 1, 'put', { key: 'd', value: 4 }),
        ]),
      ),
      ctx,
    );
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(await response.json()).toEqual({ error: 'ServiceUnavailable', message: 'try again later' });
    expect(await serverView(ctx)).toEqual(new Map([['a', 1]]));
    expect(await lmids(ctx)).toEqual({ c: 1 });
  });

  it('the retried mutation applies once the error is gone', async () => {
    let down = true;
    const ctx = testContext({
      mutators: {
        ...testMutators,
        flaky: async (tx) => {
          if (down) throw new TemporaryError('dependency down');
          await tx.set('flaky', 'done');
        },
      },
    });
    const body = pushBody('g', [mutation('c', 1, 'flaky'), mutation('c', 2, 'put', { key: 'after', value: 1 })]);
    expect((await handlePush(post('/push', body), ctx)).status).toBe(503);
    down = false;
    expect((await handlePush(post('/push', body), ctx)).status).toBe(200);
    expect(await serverView(ctx)).toEqual(
      new Map<string, unknown>([
        ['after', 1],
        ['flaky', 'done'],
      ]),
    );
  });
});

describe('push rule 5: the whole push is one transaction', () => {
  it('runs in exactly one read-write storage transaction', async () => {
    const inner = memoryStorage();
    const modes: boolean[] = [];
    const ctx = testContext({ storage: { transaction: (fn, o) => (modes.push(o.readOnly), inner.transaction(fn, o)) } });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('c', 2, 'put', { key: 'b', value: 1 })]);
    expect(modes).toEqual([false]);
  });

  it('concurrent pushes to one space serialise: no increment is lost, each takes its own version', async () => {
    const ctx = testContext();
    await push(ctx, 'g0', [mutation('c0', 1, 'increment', { key: 'n', delta: 1 })]);
    const { cookie: versionOne } = await pull(ctx, 'reader', null);
    await Promise.all(Array.from({ length: 29 }, (_, i) => push(ctx, `g${i + 1}`, [mutation(`c${i + 1}`, 1, 'increment', { key: 'n', delta: 1 })])));
    const result = await pull(ctx, 'reader', null);
    expect(result.patch).toContainEqual({ op: 'put', key: 'n', value: 30 });
    expect(versionOf(result.cookie, versionOne)).toBe(30);
  });
});

describe('push rule 5: transactionPerMutation, one transaction per mutation', () => {
  it('runs each mutation in its own read-write transaction, each visible to pulls as it commits', async () => {
    const inner = memoryStorage();
    const modes: boolean[] = [];
    const ctx = testContext({ transactionPerMutation: true, storage: { transaction: (fn, o) => (modes.push(o.readOnly), inner.transaction(fn, o)) } });
    await push(ctx, 'g', [
      mutation('c', 1, 'put', { key: 'a', value: 1 }),
      mutation('c', 2, 'put', { key: 'b', value: 2 }),
      mutation('c', 3, 'increment', { key: 'n', delta: 1 }),
    ]);
    expect(modes).toEqual([false, false, false]);
    expect(await serverView(ctx)).toEqual(
      new Map<string, unknown>([
        ['a', 1],
        ['b', 2],
        ['n', 1],
      ]),
    );
    expect(await lmids(ctx)).toEqual({ c: 3 });
  });

  it('keeps the mutations before one that refuses the push (a client of another group)', async () => {
    const ctx = testContext({ transactionPerMutation: true });
    await push(ctx, 'other', [mutation('x', 1, 'put', { key: 'x', value: 1 })]);
    const response = await handlePush(
      post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('x', 2, 'put', { key: 'x', value: 2 })])),
      ctx,
    );
    expect(response.status).toBe(400);
    expect(await serverView(ctx)).toEqual(
      new Map([
        ['a', 1],
        ['x', 1],
      ]),
    );
  });

  it('still discards all writes of a mutator that throws, and stops at a temporary error', async () => {
    const ctx = testContext({ transactionPerMutation: true });
    const response = await handlePush(
      post(
        '/push',
        pushBody('g', [
          mutation('c', 1, 'putThenFail', { key: 'a', value: 1 }),
          mutation('c', 2, 'put', { key: 'b', value: 2 }),
          mutation('c', 3, 'putThenTemporary', { key: 'c', value: 3 }),
        ]),
      ),
      ctx,
    );
    expect(response.status).toBe(503);
    expect(await serverView(ctx)).toEqual(new Map([['b', 2]]));
    expect(await lmids(ctx)).toEqual({ c: 2 });
  });
});
