/**
 * Deliveries' store transactions (src/backend/delivery-transactions.ts): batched over spaces where
 * the store runs one transaction over several, each space once in a transaction, a few at once
 * per store, and a batch that fails tried space by space.
 */
import { describe, expect, it } from 'vitest';
import { createContext, memoryStorage, type Storage } from '../../src/index.js';
import type { TransactionOptions } from '../../src/storage/types.js';
import { inDeliveries } from '../../src/backend/delivery-transactions.js';
import { testMutators } from '../support/helpers.js';

/** A memory store (with or without `manySpaces`) that records each transaction's options and the most running at once. */
function watched(manySpaces: boolean) {
  const inner = memoryStorage();
  const seen: TransactionOptions[] = [];
  let running = 0;
  let most = 0;
  const storage: Storage = {
    manySpaces,
    async transaction(fn, options) {
      seen.push(options);
      most = Math.max(most, ++running);
      try {
        return await inner.transaction(fn, options);
      } finally {
        running--;
      }
    },
  };
  return { ctx: createContext({ storage, mutators: testMutators }), seen, most: () => most };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('deliveries transactions', () => {
  it('go together where the store runs one over several spaces: those asked at once in one transaction, then those asked meanwhile in the next', async () => {
    const { ctx, seen, most } = watched(true);
    const spaces = Array.from({ length: 10 }, (_, i) => `s${i}`);
    const work = (space: string) => inDeliveries(ctx, space, async (tx) => (await tx.put(`h/${space}/x`, 1), await tick(), space));
    const first = Promise.all(spaces.slice(0, 4).map(work));
    await Promise.resolve();
    const second = Promise.all(spaces.slice(4, 7).map(work));
    await Promise.resolve();
    const third = Promise.all(spaces.slice(7).map(work));
    expect([...(await first), ...(await second), ...(await third)]).toEqual(spaces);
    // Two run at once; the third waits for one of them.
    expect(seen.map(({ space, spaces }) => spaces ?? [space])).toEqual([spaces.slice(0, 4), spaces.slice(4, 7), spaces.slice(7)]);
    expect(most()).toBe(2);
  });

  it("a space's second work waits for the next transaction, never two of one space in one", async () => {
    const { ctx, seen } = watched(true);
    const work = (space: string) => inDeliveries(ctx, space, async () => (await tick(), space));
    await Promise.all([work('a'), work('b'), work('a'), work('c'), work('a')]);
    for (const { spaces } of seen) if (spaces) expect(new Set(spaces).size).toBe(spaces.length);
    expect(seen.flatMap(({ space, spaces }) => spaces ?? [space!]).filter((space) => space === 'a')).toHaveLength(3);
  });

  it('a space at a time, at most four at once, on a store that runs no transaction over several', async () => {
    const { ctx, seen, most } = watched(false);
    await Promise.all(Array.from({ length: 10 }, (_, i) => inDeliveries(ctx, `s${i}`, async () => tick())));
    expect(seen.every(({ spaces, space, lane }) => spaces === undefined && space !== undefined && lane === 'deliveries')).toBe(true);
    expect(most()).toBe(4);
  });

  it('a batch that fails is tried space by space: only the space whose work fails is told, and nothing of the batch is kept twice', async () => {
    const { ctx } = watched(true);
    const tries = new Map<string, number>();
    const outcomes = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((space) =>
        inDeliveries(ctx, space, async (tx) => {
          tries.set(space, (tries.get(space) ?? 0) + 1);
          await tick();
          if (space === 'c') throw new Error('c refused');
          const n = ((await tx.get(`h/${space}/n`)) as number | undefined) ?? 0;
          await tx.put(`h/${space}/n`, n + 1);
          return space;
        }),
      ),
    );
    expect(outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : String(outcome.reason)))).toEqual(['a', 'b', 'Error: c refused', 'd']);
    // All four together, which failed, then each alone.
    expect(Object.fromEntries(tries)).toEqual({ a: 2, b: 2, c: 2, d: 2 });
    const counts = await ctx.storage.transaction(async (tx) => Promise.all(['a', 'b', 'c', 'd'].map((space) => tx.get(`h/${space}/n`))), { readOnly: true });
    expect(counts).toEqual([1, 1, undefined, 1]);
  });
});
