import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JSONValue, WriteTransaction } from '../../src/index.js';
import { compareUTF8 } from '../../src/store.js';
import { mutation, push, serverView, testContext } from '../support/helpers.js';

/** Runs `body` as a mutator after seeding `seed`, and returns what it returned. */
async function inMutator<T>(seed: Record<string, JSONValue>, body: (tx: WriteTransaction) => Promise<T>): Promise<T> {
  let result: T | undefined;
  let failure: unknown;
  const ctx = testContext({
    mutators: {
      seed: async (tx) => {
        for (const [key, value] of Object.entries(seed)) await tx.set(key, value);
      },
      run: async (tx) => {
        try {
          result = await body(tx);
        } catch (error) {
          failure = error;
        }
      },
    },
  });
  await push(ctx, 'g', [mutation('c', 1, 'seed'), mutation('c', 2, 'run')]);
  if (failure) throw failure;
  return result as T;
}

const SEED = { a: 1, 'b/1': 2, 'b/2': 3, 'b/3': 4, c: 5 };

describe("the mutator transaction behaves like the client's WriteTransaction", () => {
  it("get, has, isEmpty and del see the space and the mutation's own writes", async () => {
    const seen = await inMutator(SEED, async (tx) => {
      const out: unknown[] = [await tx.get('a'), await tx.has('a'), await tx.has('zz'), await tx.isEmpty()];
      await tx.set('zz', { x: 1 });
      out.push(await tx.get('zz'), await tx.del('a'), await tx.del('a'), await tx.has('a'), await tx.get('a'));
      return out;
    });
    expect(seen).toEqual([1, true, false, false, { x: 1 }, true, false, false, undefined]);
  });

  it('scan merges buffered writes and deletes with stored entries, with prefix, start and limit', async () => {
    const seen = await inMutator(SEED, async (tx) => {
      await tx.set('b/15', 'new');
      await tx.del('b/2');
      return {
        prefix: await tx.scan({ prefix: 'b/' }).entries().toArray(),
        start: await tx
          .scan({ prefix: 'b/', start: { key: 'b/15' } })
          .keys()
          .toArray(),
        exclusive: await tx
          .scan({ prefix: 'b/', start: { key: 'b/15', exclusive: true } })
          .keys()
          .toArray(),
        limit: await tx.scan({ limit: 2 }).toArray(),
        startBeforePrefix: await tx
          .scan({ prefix: 'b/', start: { key: 'a' }, limit: 1 })
          .keys()
          .toArray(),
        iterated: await (async () => {
          const values: JSONValue[] = [];
          for await (const value of tx.scan({ prefix: 'c' })) values.push(value);
          return values;
        })(),
      };
    });
    expect(seen).toEqual({
      prefix: [
        ['b/1', 2],
        ['b/15', 'new'],
        ['b/3', 4],
      ],
      start: ['b/15', 'b/3'],
      exclusive: ['b/3'],
      limit: [1, 2],
      startBeforePrefix: ['b/1'],
      iterated: [5],
    });
  });

  it('values are copied on set and frozen on read', async () => {
    const seen = await inMutator({}, async (tx) => {
      const value = { list: [1] };
      await tx.set('k', value);
      value.list.push(2);
      const read = (await tx.get('k')) as { list: number[] };
      return { read: structuredClone(read), frozen: Object.isFrozen(read) && Object.isFrozen(read.list) };
    });
    expect(seen).toEqual({ read: { list: [1] }, frozen: true });
  });

  it('a "__proto__" key in a value is kept as data and never becomes a prototype', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'k', value: JSON.parse('{"__proto__":{"polluted":true}}') })]);
    const value = (await serverView(ctx)).get('k') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(JSON.stringify(value)).toBe('{"__proto__":{"polluted":true}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('using the transaction after the mutator returned throws', async () => {
    let leaked: WriteTransaction | undefined;
    const ctx = testContext({ mutators: { leak: (tx) => void (leaked = tx) } });
    await push(ctx, 'g', [mutation('c', 1, 'leak')]);
    await expect(leaked!.set('late', 1)).rejects.toThrow(/closed/);
    await expect(leaked!.get('late')).rejects.toThrow(/closed/);
  });

  it('exposes clientID, mutationID, reason and location', async () => {
    const seen = await inMutator({}, async (tx) => [tx.clientID, tx.mutationID, tx.reason, tx.location, tx.userID]);
    expect(seen).toEqual(['c', 2, 'authoritative', 'server', undefined]);
  });

  it('a scan over any stored and buffered keys returns them once each, in UTF-8 order', async () => {
    const key = fc.string({ unit: 'binary', maxLength: 4 }).filter((s) => s.isWellFormed());
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(key, { maxLength: 12 }),
        fc.uniqueArray(key, { maxLength: 12 }),
        fc.array(key, { maxLength: 4 }),
        async (stored, written, deleted) => {
          const keys = await inMutator(Object.fromEntries(stored.map((k) => [k, 1])), async (tx) => {
            for (const k of written) await tx.set(k, 2);
            for (const k of deleted) await tx.del(k);
            return tx.scan().keys().toArray();
          });
          const expected = [...new Set([...stored, ...written])].filter((k) => !deleted.includes(k)).sort(compareUTF8);
          expect(keys).toEqual(expected);
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 300) },
    );
  });
});
