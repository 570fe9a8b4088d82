import { expect } from '../expect.js';
import { read, scan, tick, type Suite } from './suite.js';
import type { Storage } from '../../storage/types.js';

/** The checks of spaces: one space serialised, others going on beside it. */
export function spacesChecks({ describe, it, create, oneAtATime }: Suite): void {
  describe('spaces', () => {
    it('read-write transactions of one space are serialised: 30 concurrent increments with awaits give 30', async () => {
      const storage = await create();
      const inSpace = { readOnly: false, space: 'a' };
      await storage.transaction((tx) => tx.put('n', 0), inSpace);
      await Promise.all(
        Array.from({ length: 30 }, () =>
          storage.transaction(async (tx) => {
            const n = (await tx.get('n')) as number;
            await tick();
            await tx.put('n', n + 1);
          }, inSpace),
        ),
      );
      expect(await storage.transaction((tx) => tx.get('n'), { readOnly: true, space: 'a' })).toBe(30);
    });

    if (!oneAtATime)
      it("another space's reads and writes go on while one space's transaction waits", async () => {
        const storage = await create();
        const { release, done: slow } = heldWrite(storage);
        await tick();
        const other = (async () => {
          await storage.transaction((tx) => tx.put('b/x', 1), { readOnly: false, space: 'b' });
          return storage.transaction((tx) => tx.get('b/x'), { readOnly: true, space: 'b' });
        })();
        const timeout = new Promise((resolve) => setTimeout(() => resolve('waited for space a'), 2_000));
        expect(await Promise.race([other, timeout])).toBe(1);
        release();
        await slow;
        expect(await scan(storage, { prefix: '' })).toEqual([
          ['a/x', 1],
          ['a/y', 1],
          ['b/x', 1],
        ]);
      });

    it("a transaction of no space sees a space's transaction whole or not at all", async () => {
      const storage = await create();
      const { release, done: writing } = heldWrite(storage);
      await tick();
      const reading = read(storage, async (tx) => [await tx.get('a/x'), await tx.get('a/y')]);
      await tick();
      release();
      await writing;
      const [x, y] = await reading;
      expect(x).toBe(y);
    });
  });
}

/** A transaction of space `a` that writes `a/x`, then waits for `release` before it writes `a/y` and commits. */
function heldWrite(storage: Storage): { release: () => void; done: Promise<void> } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const done = storage.transaction(
    async (tx) => {
      await tx.put('a/x', 1);
      await gate;
      await tx.put('a/y', 1);
    },
    { readOnly: false, space: 'a' },
  );
  return { release, done };
}
