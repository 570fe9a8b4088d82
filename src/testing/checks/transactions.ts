import fc from 'fast-check';
import type { StorageTransaction, StoredValue } from '../../storage/types.js';
import { expect } from '../expect.js';
import { UNICODE_KEYS, RW, Rollback, sortedEntries, putAll, read, scan, writersOfBoth, tick, type Suite } from './suite.js';

/** The checks of transactions: atomicity, isolation, rollbacks and retries. */
export function transactionsChecks({ describe, it, create, runs }: Suite): void {
  describe('transactions', () => {
    it('a transaction sees its own puts and dels, by get and by scan, before it commits', async () => {
      const storage = await create();
      await putAll(storage, [
        ['a', 1],
        ['b', 2],
        ['c', 3],
      ]);
      const seen = await storage.transaction(async (tx) => {
        await tx.put('a', 10);
        await tx.del('b');
        await tx.put('d', 4);
        await tx.put('ab', 5);
        await tx.del('ab');
        await tx.put('😀', 6);
        await tx.put('\uFFFD', 7);
        return {
          a: await tx.get('a'),
          b: await tx.get('b'),
          d: await tx.get('d'),
          ab: await tx.get('ab'),
          all: await tx.scan({ prefix: '' }),
          page: await tx.scan({ prefix: '', start: { key: 'a', exclusive: true }, limit: 2 }),
        };
      }, RW);
      const expected = [
        ['a', 10],
        ['c', 3],
        ['d', 4],
        ['\uFFFD', 7],
        ['😀', 6],
      ];
      expect(seen).toEqual({
        a: 10,
        b: undefined,
        d: 4,
        ab: undefined,
        all: expected,
        page: [
          ['c', 3],
          ['d', 4],
        ],
      });
      expect(await scan(storage, { prefix: '' })).toEqual(expected);
    });

    it('a callback that throws leaves no trace, and transaction rejects with its error', async () => {
      const storage = await create();
      const before = [
        ['deleted', 'still here'],
        ['kept', 'original'],
        ['twice', 'original'],
      ] as const;
      await putAll(storage, before);
      const error = new Error('callback failed');
      const result = storage.transaction(async (tx) => {
        await tx.put('twice', 'first overwrite');
        await tx.put('new', 'never committed');
        await tx.del('deleted');
        await tx.put('twice', 'second overwrite');
        await tx.put('fresh', 1);
        await tx.del('fresh');
        await tx.del('kept');
        await tx.put('kept', 'rewritten');
        await tick();
        await tx.put('late', 'after an await');
        throw error;
      }, RW);
      await expect(result).rejects.toBe(error);
      expect(await scan(storage, { prefix: '' })).toEqual(before);
      const got = await read(storage, async (tx) => [await tx.get('twice'), await tx.get('deleted'), await tx.get('new'), await tx.get('late')]);
      expect(got).toEqual(['original', 'still here', undefined, undefined]);
    });

    it('a transaction after a failed one commits normally', async () => {
      const storage = await create();
      await putAll(storage, [['k', 0]]);
      await expect(
        storage.transaction(async (tx) => {
          await tx.put('k', 1);
          throw new Error('fail');
        }, RW),
      ).rejects.toThrow('fail');
      await storage.transaction(async (tx) => tx.put('k', ((await tx.get('k')) as number) + 10), RW);
      expect(await scan(storage, { prefix: '' })).toEqual([['k', 10]]);
    });

    it('a read-only transaction rejects put and del, and changes nothing', async () => {
      const storage = await create();
      await putAll(storage, [['k', 1]]);
      await read(storage, async (tx) => {
        await expect(tx.put('k', 2)).rejects.toThrow();
        await expect(tx.put('new', 2)).rejects.toThrow();
        await expect(tx.del('k')).rejects.toThrow();
      });
      expect(await scan(storage, { prefix: '' })).toEqual([['k', 1]]);
    });

    it.each([
      ['committed', false],
      ['rolled back', true],
    ])('a tx used after its transaction %s rejects, and a late write does not land', async (_, fails) => {
      const storage = await create();
      await putAll(storage, [['k', 1]]);
      let leaked: StorageTransaction | undefined;
      const done = storage.transaction(async (tx) => {
        leaked = tx;
        if (fails) throw new Error('rolled back');
      }, RW);
      if (fails) await expect(done).rejects.toThrow('rolled back');
      else await done;
      const tx = leaked!;
      await expect(tx.get('k')).rejects.toThrow();
      await expect(tx.scan({ prefix: '' })).rejects.toThrow();
      await expect(tx.put('late', 1)).rejects.toThrow();
      await expect(tx.put('k', 2)).rejects.toThrow();
      await expect(tx.del('k')).rejects.toThrow();
      expect(await scan(storage, { prefix: '' })).toEqual([['k', 1]]);
    });

    it('read-write transactions are serialised: 50 concurrent increments with awaits each read a different count and give 50', async () => {
      const storage = await create();
      await putAll(storage, [['counter', 0]]);
      const reads = await Promise.all(
        Array.from({ length: 50 }, () =>
          storage.transaction(async (tx) => {
            const count = (await tx.get('counter')) as number;
            await tick();
            await tx.put('counter', count + 1);
            return count;
          }, RW),
        ),
      );
      expect(reads.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
      expect(await read(storage, (tx) => tx.get('counter'))).toBe(50);
    });

    it.each([
      ['read-only', true],
      ['read-write', false],
    ])('a %s transaction reads one committed state: A === B while writers update both', async (_, readOnly) => {
      const storage = await create();
      await putAll(storage, [
        ['snap/A', 0],
        ['snap/B', 0],
      ]);
      const seen: Array<Promise<StoredValue[]>> = [];
      const jobs = writersOfBoth(storage, ['snap/A', 'snap/B'], () =>
        seen.push(
          storage.transaction(
            async (tx) => {
              const a = await tx.get('snap/A');
              await tick();
              const b = await tx.get('snap/B');
              await tick();
              return [a, b, await tx.get('snap/A')] as StoredValue[];
            },
            { readOnly },
          ),
        ),
      );
      await Promise.all(jobs);
      for (const [a, ...rest] of await Promise.all(seen)) expect(rest).toEqual([a, a]);
      // Whichever writer committed last: a store promises no order among concurrent writers.
      const final = await scan(storage, { prefix: 'snap/' });
      const last = final[0]?.[1];
      expect(final).toEqual([
        ['snap/A', last],
        ['snap/B', last],
      ]);
      expect(typeof last === 'number' && last >= 1 && last <= 20).toBe(true);
    });

    it('scans in one transaction read one committed state while writers update the range', async () => {
      const storage = await create();
      await putAll(storage, [
        ['snap/A', 0],
        ['snap/B', 0],
      ]);
      const seen: Array<Promise<StoredValue[]>> = [];
      const jobs = writersOfBoth(storage, ['snap/B', 'snap/A'], () =>
        seen.push(
          read(storage, async (tx) => {
            const first = await tx.scan({ prefix: 'snap/', limit: 1 });
            await tick();
            const rest = await tx.scan({ prefix: 'snap/', start: { key: first[0]![0], exclusive: true } });
            await tick();
            const all = await tx.scan({ prefix: 'snap/' });
            return [...first, ...rest, ...all].map(([, value]) => value);
          }),
        ),
      );
      await Promise.all(jobs);
      for (const values of await Promise.all(seen)) expect(values).toEqual(Array(4).fill(values[0]));
    });

    it('no transaction sees the writes of a transaction that fails', async () => {
      const storage = await create();
      await putAll(storage, [
        ['A', 'clean'],
        ['B', 'clean'],
      ]);
      const jobs: Array<Promise<unknown>> = [];
      const seen: Array<Promise<Array<StoredValue | undefined>>> = [];
      for (let i = 0; i < 10; i++) {
        jobs.push(
          storage
            .transaction(async (tx) => {
              await tx.put('A', 'dirty');
              await tx.put('C', 'dirty');
              await tick();
              await tx.put('B', 'dirty');
              await tick();
              throw new Error('rolled back');
            }, RW)
            .catch(() => undefined),
        );
        for (const readOnly of [true, false]) {
          seen.push(
            storage.transaction(
              async (tx) => {
                const values = [await tx.get('A'), await tx.get('C')];
                await tick();
                values.push(await tx.get('B'), ...(await tx.scan({ prefix: '' })).map(([, value]) => value));
                return values;
              },
              { readOnly },
            ),
          );
        }
      }
      await Promise.all(jobs);
      for (const values of await Promise.all(seen)) {
        expect(values).toEqual(['clean', undefined, 'clean', 'clean', 'clean']);
      }
    });

    it('a full scan after any transactions equals the model, in UTF-8 order', async () => {
      const key = fc.constantFrom(...UNICODE_KEYS, 'b', 'b/1');
      const value = fc.oneof(fc.integer(), fc.string({ unit: 'binary', maxLength: 3 }), fc.constant(null));
      // An op without a value is a del.
      const op = fc.record({ key, value: fc.option(value, { nil: undefined, freq: 3 }) });
      const transaction = fc.record({ ops: fc.array(op, { maxLength: 8 }), fails: fc.boolean() });
      await fc.assert(
        fc.asyncProperty(fc.array(transaction, { minLength: 1, maxLength: 8 }), async (transactions) => {
          const storage = await create();
          let model = new Map<string, StoredValue>();
          for (const { ops, fails } of transactions) {
            const pending = new Map(model);
            for (const { key, value } of ops) {
              if (value === undefined) pending.delete(key);
              else pending.set(key, value);
            }
            let seenInside: unknown;
            const result = storage.transaction(async (tx) => {
              for (const { key, value } of ops) {
                if (value === undefined) await tx.del(key);
                else await tx.put(key, value);
              }
              seenInside = await tx.scan({ prefix: '' });
              if (fails) throw new Rollback();
            }, RW);
            if (fails) await expect(result).rejects.toBeInstanceOf(Rollback);
            else await result;
            expect(seenInside).toEqual(sortedEntries(pending));
            if (!fails) model = pending;
            expect(await scan(storage, { prefix: '' })).toEqual(sortedEntries(model));
          }
        }),
        { numRuns: runs },
      );
    });
  });
}
