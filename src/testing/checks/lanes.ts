import type { Storage, StorageTransaction, TransactionOptions, WriteLane } from '../../storage/types.js';
import { expect } from '../expect.js';
import { read, tick, type Suite } from './suite.js';

/**
 * The checks of a space's write lanes (`WriteLane`): each lane serialised, a transaction of no
 * lane excluding both, and a lane's reads never seeing the other's writes before they commit,
 * whether the store locks the lanes apart or not. With `lanesApart`, also that a deliveries
 * transaction goes on while a data transaction of its space waits.
 */
export function lanesChecks({ describe, it, create, oneAtATime, lanesApart }: Suite): void {
  describe('write lanes of a space', () => {
    it('each lane is serialised, and a transaction of no lane excludes both: concurrent increments with awaits are all counted', async () => {
      const storage = await create();
      const data: TransactionOptions = { readOnly: false, space: 'a', lane: 'data' };
      const deliveries: TransactionOptions = { readOnly: false, space: 'a', lane: 'deliveries' };
      const whole: TransactionOptions = { readOnly: false, space: 'a' };
      await storage.transaction(async (tx) => (await tx.put('a/d', 0), await tx.put('a/h', 0)), whole);
      const increment = (key: string, options: TransactionOptions) =>
        storage.transaction(async (tx) => {
          const n = (await tx.get(key)) as number;
          await tick();
          await tx.put(key, n + 1);
        }, options);
      // Interleaved: each lane's writers, and writers of both, one after another in arrival.
      await Promise.all(
        Array.from({ length: 10 }, () => [increment('a/d', data), increment('a/h', deliveries), increment('a/d', whole), increment('a/h', whole)]).flat(),
      );
      expect(await read(storage, async (tx) => [await tx.get('a/d'), await tx.get('a/h')])).toEqual([20, 20]);
    });

    it("a deliveries transaction never reads a data transaction's writes before it commits, nor those of one rolled back", async () => {
      const storage = await create();
      await storage.transaction((tx) => tx.put('a/x', 0), { readOnly: false, space: 'a' });
      const { gate, release } = opened();
      const failing = storage.transaction(
        async (tx) => {
          await tx.put('a/x', 1);
          await gate;
          throw new Error('rolled back');
        },
        { readOnly: false, space: 'a', lane: 'data' },
      );
      failing.catch(() => {});
      await tick();
      const seen = storage.transaction((tx) => tx.get('a/x'), { readOnly: false, space: 'a', lane: 'deliveries' });
      await tick();
      release();
      await expect(failing).rejects.toThrow('rolled back');
      expect(await seen).toBe(0);
      expect(await read(storage, (tx) => tx.get('a/x'))).toBe(0);
    });

    if (lanesApart && !oneAtATime)
      it('a deliveries transaction goes on while a data transaction of its space waits, and each commits its own rows', async () => {
        const storage = await create();
        await besideHeldData(storage, () =>
          storage.transaction(async (tx) => (await tx.put('a/h', 1), tx.get('a/d')), { readOnly: false, space: 'a', lane: 'deliveries' }),
        );
      });

    it("a transaction of several spaces' deliveries lanes (where the store runs one) is whole, and serialised with each space's transactions: concurrent increments, in any order of spaces, are all counted", async () => {
      const storage = await create();
      if (!storage.manySpaces) return;
      const spaces = ['a', 'b', 'c'];
      await storage.transaction(
        async (tx) => {
          for (const space of spaces) await tx.put(`${space}/h`, 0);
        },
        { readOnly: false },
      );
      const increment = async (tx: StorageTransaction, space: string) => {
        const n = (await tx.get(`${space}/h`)) as number;
        await tick();
        await tx.put(`${space}/h`, n + 1);
      };
      const many = (order: string[]) =>
        storage.transaction(
          async (tx) => {
            for (const space of order) await increment(tx, space);
          },
          { readOnly: false, lane: 'deliveries', spaces: order },
        );
      const one = (space: string, lane?: WriteLane) => storage.transaction((tx) => increment(tx, space), { readOnly: false, space, lane });
      const rolledBack = storage.transaction(
        async (tx) => {
          for (const space of spaces) await increment(tx, space);
          throw new Error('rolled back');
        },
        { readOnly: false, lane: 'deliveries', spaces },
      );
      await Promise.all([
        ...Array.from({ length: 5 }, () => [many(['a', 'b', 'c']), many(['c', 'b', 'a']), one('b', 'deliveries'), one('c')]).flat(),
        rolledBack.then(
          () => Promise.reject(new Error('a transaction that threw committed')),
          () => {},
        ),
      ]);
      expect(await read(storage, async (tx) => Promise.all(spaces.map((space) => tx.get(`${space}/h`))))).toEqual([10, 15, 15]);
    });

    if (lanesApart && !oneAtATime)
      it("a transaction of several spaces' deliveries lanes goes on while a data transaction of one of them waits", async () => {
        const storage = await create();
        if (!storage.manySpaces) return;
        await besideHeldData(storage, () =>
          storage.transaction(async (tx) => (await tx.put('a/h', 1), await tx.put('b/h', 1)), { readOnly: false, lane: 'deliveries', spaces: ['a', 'b'] }),
        );
      });

    it('a transaction of several spaces that is not of the deliveries lane, or names a space too, is refused', async () => {
      const storage = await create();
      if (!storage.manySpaces) return;
      for (const options of [
        { readOnly: false, spaces: ['a'] },
        { readOnly: false, lane: 'data', spaces: ['a'] },
        { readOnly: false, lane: 'deliveries', space: 'a', spaces: ['a'] },
        { readOnly: false, lane: 'deliveries', spaces: [] },
      ] as TransactionOptions[]) {
        await expect(storage.transaction((tx) => tx.put('a/h', 1), options)).rejects.toThrow('A transaction of several spaces');
      }
      expect(await read(storage, (tx) => tx.get('a/h'))).toBeUndefined();
    });
  });
}

function opened(): { gate: Promise<void>; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return { gate, release };
}

/**
 * Holds a data transaction of space `a` open (it writes `a/d`), runs `delivery` (which writes
 * `a/h` and reads nothing it wrote), and checks that it ended meanwhile, with nothing of the held
 * one seen; then that both committed.
 */
async function besideHeldData(storage: Storage, delivery: () => Promise<unknown>): Promise<void> {
  const { gate, release } = opened();
  const slow = storage.transaction(
    async (tx) => {
      await tx.put('a/d', 1);
      await gate;
    },
    { readOnly: false, space: 'a', lane: 'data' },
  );
  await tick();
  const timeout = new Promise((resolve) => setTimeout(() => resolve('waited for the data transaction'), 2_000));
  expect(await Promise.race([delivery(), timeout])).toBeUndefined();
  release();
  await slow;
  expect(await read(storage, async (tx) => [await tx.get('a/d'), await tx.get('a/h')])).toEqual([1, 1]);
}
