import type { Storage, TransactionOptions } from '../../storage/types.js';
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
      await Promise.all(Array.from({ length: 10 }, () => [increment('a/d', data), increment('a/h', deliveries), increment('a/d', whole), increment('a/h', whole)]).flat());
      expect(await read(storage, async (tx) => [await tx.get('a/d'), await tx.get('a/h')])).toEqual([20, 20]);
    });

    it("a deliveries transaction never reads a data transaction's writes before it commits, nor those of one rolled back", async () => {
      const storage = await create();
      await storage.transaction((tx) => tx.put('a/x', 0), { readOnly: false, space: 'a' });
      const { gate, release } = opened();
      const failing = storage.transaction(async (tx) => {
        await tx.put('a/x', 1);
        await gate;
        throw new Error('rolled back');
      }, { readOnly: false, space: 'a', lane: 'data' });
      failing.catch(() => {});
      await tick();
      const seen = storage.transaction((tx) => tx.get('a/x'), { readOnly: false, space: 'a', lane: 'deliveries' });
      await tick();
      release();
      await expect(failing).rejects.toThrow('rolled back');
      expect(await seen).toBe(0);
      expect(await read(storage, (tx) => tx.get('a/x'))).toBe(0);
    });

    if (lanesApart && !oneAtATime) it("a deliveries transaction goes on while a data transaction of its space waits, and each commits its own rows", async () => {
      const storage = await create();
      const { gate, release } = opened();
      const slow = storage.transaction(async (tx) => {
        await tx.put('a/d', 1);
        await gate;
      }, { readOnly: false, space: 'a', lane: 'data' });
      await tick();
      const delivery = storage.transaction(async (tx) => (await tx.put('a/h', 1), tx.get('a/d')), { readOnly: false, space: 'a', lane: 'deliveries' });
      const timeout = new Promise((resolve) => setTimeout(() => resolve('waited for the data transaction'), 2_000));
      expect(await Promise.race([delivery, timeout])).toBeUndefined();
      release();
      await slow;
      expect(await rows(storage)).toEqual([1, 1]);
    });
  });
}

function opened(): { gate: Promise<void>; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return { gate, release };
}

function rows(storage: Storage) {
  return read(storage, async (tx) => [await tx.get('a/d'), await tx.get('a/h')]);
}
