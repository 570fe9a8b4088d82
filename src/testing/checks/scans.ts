import fc from 'fast-check';
import type { ScanOptions, Storage } from '../../storage/types.js';
import { expect } from '../expect.js';
import { UNICODE_KEYS, compareBytes, putAll, scan, keysOf, shuffled, type Suite } from './suite.js';

/** The checks of scan: order, prefixes, starts, limits and reverse, in UTF-8 byte order. */
export function scansChecks({ describe, it, create, runs }: Suite): void {
  describe('scan', () => {
    // 'a', 'a/', 'a/1'... and 'a0' ('0' follows '/') test prefix edges; 'b' follows every 'a' key.
    const FIXTURE = ['a', 'a/', 'a/1', 'a/2', 'a/3', 'a0', 'b', 'b/1'].map((key) => [key, `value of ${key}`] as const);

    async function fixture(): Promise<Storage> {
      const storage = await create();
      await putAll(storage, shuffled(FIXTURE));
      return storage;
    }

    it('a full scan returns every entry with its value, in key order', async () => {
      const storage = await fixture();
      expect(await scan(storage, { prefix: '' })).toEqual(FIXTURE);
    });

    it('prefix keeps exactly the keys that start with it, a key equal to it included', async () => {
      const storage = await fixture();
      expect(keysOf(await scan(storage, { prefix: 'a/' }))).toEqual(['a/', 'a/1', 'a/2', 'a/3']);
      expect(keysOf(await scan(storage, { prefix: 'a' }))).toEqual(['a', 'a/', 'a/1', 'a/2', 'a/3', 'a0']);
      expect(keysOf(await scan(storage, { prefix: 'a/2' }))).toEqual(['a/2']);
      expect(keysOf(await scan(storage, { prefix: 'b/' }))).toEqual(['b/1']);
    });

    it('an inclusive start begins at the start key', async () => {
      const storage = await fixture();
      expect(keysOf(await scan(storage, { prefix: 'a/', start: { key: 'a/2' } }))).toEqual(['a/2', 'a/3']);
      expect(keysOf(await scan(storage, { prefix: 'a/', start: { key: 'a/2', exclusive: false } }))).toEqual(['a/2', 'a/3']);
      expect(keysOf(await scan(storage, { prefix: '', start: { key: 'a0' } }))).toEqual(['a0', 'b', 'b/1']);
    });

    it('an exclusive start begins after the start key', async () => {
      const storage = await fixture();
      expect(keysOf(await scan(storage, { prefix: 'a/', start: { key: 'a/2', exclusive: true } }))).toEqual(['a/3']);
      expect(keysOf(await scan(storage, { prefix: 'a/', start: { key: 'a/3', exclusive: true } }))).toEqual([]);
      expect(keysOf(await scan(storage, { prefix: '', start: { key: 'a0', exclusive: true } }))).toEqual(['b', 'b/1']);
    });

    it('an absent start key begins at the next key, exclusive or not', async () => {
      const storage = await fixture();
      for (const exclusive of [false, true]) {
        expect(keysOf(await scan(storage, { prefix: 'a/', start: { key: 'a/15', exclusive } }))).toEqual(['a/2', 'a/3']);
        expect(keysOf(await scan(storage, { prefix: 'a', start: { key: 'a/', exclusive } }))).toEqual(
          exclusive ? ['a/1', 'a/2', 'a/3', 'a0'] : ['a/', 'a/1', 'a/2', 'a/3', 'a0'],
        );
      }
    });

    it('a start before the prefix returns the whole prefix', async () => {
      const storage = await fixture();
      for (const start of [{ key: '' }, { key: 'a' }, { key: 'a', exclusive: true }, { key: 'A', exclusive: true }]) {
        expect(keysOf(await scan(storage, { prefix: 'a/', start }))).toEqual(['a/', 'a/1', 'a/2', 'a/3']);
      }
    });

    it('a start beyond the prefix keys returns nothing', async () => {
      const storage = await fixture();
      expect(await scan(storage, { prefix: 'a/', start: { key: 'a/4' } })).toEqual([]);
      expect(await scan(storage, { prefix: 'a/', start: { key: 'b' } })).toEqual([]);
      expect(await scan(storage, { prefix: '', start: { key: 'c' } })).toEqual([]);
    });

    it('an exclusive start equal to the prefix skips the key equal to the prefix', async () => {
      const storage = await fixture();
      expect(keysOf(await scan(storage, { prefix: 'a/', start: { key: 'a/' } }))).toEqual(['a/', 'a/1', 'a/2', 'a/3']);
      expect(keysOf(await scan(storage, { prefix: 'a/', start: { key: 'a/', exclusive: true } }))).toEqual(['a/1', 'a/2', 'a/3']);
      expect(keysOf(await scan(storage, { prefix: 'b', start: { key: 'b', exclusive: true } }))).toEqual(['b/1']);
    });

    it('limit caps the entries returned: 0, 1, some, more than there are, or absent', async () => {
      const storage = await fixture();
      expect(await scan(storage, { prefix: 'a/', limit: 0 })).toEqual([]);
      expect(await scan(storage, { prefix: 'a/', limit: 1 })).toEqual([FIXTURE[1]]);
      expect(keysOf(await scan(storage, { prefix: 'a/', limit: 3 }))).toEqual(['a/', 'a/1', 'a/2']);
      expect(keysOf(await scan(storage, { prefix: 'a/', limit: 4 }))).toEqual(['a/', 'a/1', 'a/2', 'a/3']);
      expect(keysOf(await scan(storage, { prefix: 'a/', limit: 100 }))).toEqual(['a/', 'a/1', 'a/2', 'a/3']);
      expect(keysOf(await scan(storage, { prefix: 'a/', limit: undefined }))).toEqual(['a/', 'a/1', 'a/2', 'a/3']);
      expect(keysOf(await scan(storage, { prefix: 'a/', start: { key: 'a/1', exclusive: true }, limit: 1 }))).toEqual(['a/2']);
      expect(keysOf(await scan(storage, { prefix: '', start: { key: 'a0' }, limit: 2 }))).toEqual(['a0', 'b']);
      expect(await scan(storage, { prefix: 'a/', start: { key: 'a/1' }, limit: 0 })).toEqual([]);
    });

    it('an empty store, and a prefix nothing matches, scan to nothing', async () => {
      const empty = await create();
      expect(await scan(empty, { prefix: '' })).toEqual([]);
      expect(await scan(empty, { prefix: 'a', start: { key: 'a' }, limit: 10 })).toEqual([]);
      const storage = await fixture();
      for (const prefix of ['c', 'a/4', 'a//', 'A', 'b/1/']) expect(await scan(storage, { prefix })).toEqual([]);
    });

    it('keys order by their UTF-8 bytes, not by UTF-16 code units', async () => {
      const storage = await create();
      const keys = UNICODE_KEYS.map((key) => `u/${key}`);
      // The premise: these keys sort differently by UTF-16 units, so a UTF-16 store fails here.
      expect([...keys].sort()).not.toEqual([...keys].sort(compareBytes));
      await putAll(
        storage,
        shuffled(keys).map((key) => [key, key]),
      );
      const entries = await scan(storage, { prefix: 'u/' });
      expect(keysOf(entries)).toEqual([...keys].sort(compareBytes));
      expect(entries.every(([key, value]) => key === value)).toBe(true);
    });

    it('prefix and start compare in UTF-8 order', async () => {
      const storage = await create();
      await putAll(
        storage,
        shuffled(UNICODE_KEYS).map((key) => [key, key]),
      );
      const sorted = [...UNICODE_KEYS].sort(compareBytes);
      const after = (start: string, exclusive: boolean) => sorted.filter((key) => compareBytes(key, start) > (exclusive ? 0 : -1));
      // '😀' is a surrogate pair: below '\uFFFD' in UTF-16 units, above it in UTF-8 bytes.
      for (const [start, exclusive] of [
        ['\uFFFD', false],
        ['\uFFFD', true],
        ['😀', false],
        ['😀', true],
        ['\uE000', true],
        ['a\uFFFF', true],
      ] as const) {
        expect(keysOf(await scan(storage, { prefix: '', start: { key: start, exclusive } }))).toEqual(after(start, exclusive));
      }
      expect(keysOf(await scan(storage, { prefix: '😀', start: { key: '\uFFFD' } }))).toEqual(['😀', '😀a', '😀😀']);
      expect(keysOf(await scan(storage, { prefix: '\uFFFD', start: { key: '😀' } }))).toEqual([]);
      expect(keysOf(await scan(storage, { prefix: 'a', start: { key: 'a\uFFFF', exclusive: true } }))).toEqual(['a𝄞', 'a😀']);
    });

    it('any scan (prefix, start, exclusive, limit) returns the model entries in range, in UTF-8 order', async () => {
      const storage = await create();
      await putAll(
        storage,
        shuffled(UNICODE_KEYS).map((key) => [key, key]),
      );
      const sorted = [...UNICODE_KEYS].sort(compareBytes);
      const bound = fc.constantFrom('', 'a', '😀', '\uFFFD', '\uE000', 'b', ...UNICODE_KEYS);
      // The start key is often the prefix itself or a key under it, where the edge cases are.
      const options = bound.chain((prefix) =>
        fc.record({
          prefix: fc.constant(prefix),
          start: fc.option(
            fc.record({
              key: fc.oneof(
                fc.constant(prefix),
                bound,
                fc.string({ unit: 'binary', maxLength: 2 }).map((s) => prefix + s),
              ),
              exclusive: fc.boolean(),
            }),
            { nil: undefined },
          ),
          limit: fc.option(fc.nat(20), { nil: undefined }),
        }),
      );
      await fc.assert(
        fc.asyncProperty(options, async ({ prefix, start, limit }) => {
          const expected = sorted
            .filter((key) => key.startsWith(prefix))
            .filter((key) => start === undefined || compareBytes(key, start.key) > (start.exclusive ? 0 : -1))
            .slice(0, limit);
          expect(keysOf(await scan(storage, { prefix, start, limit }))).toEqual(expected);
        }),
        { numRuns: runs },
      );
    });

    it('paging with limit and an exclusive start returns every key exactly once, in order', async () => {
      const storage = await create();
      const chars = ['a', 'é', '\uE000', '\uFFFD', '😀', '𝄞', 'Z'];
      const keys = Array.from({ length: 2000 }, (_, i) => `p/${chars[i % chars.length]}${i}`);
      await putAll(storage, shuffled([...keys, 'o', 'p', 'p0', 'q'].map((key) => [key, key.length])));
      const seen: string[] = [];
      let start: ScanOptions['start'];
      let pages = 0;
      for (;;) {
        const page = await scan(storage, { prefix: 'p/', start, limit: 100 });
        expect(page.length).toBeLessThanOrEqual(100);
        seen.push(...keysOf(page));
        if (++pages > 100 || page.length < 100) break;
        start = { key: page[page.length - 1]![0], exclusive: true };
      }
      expect(seen).toEqual(keys.sort(compareBytes));
      expect(pages).toBe(21);
    });
  });
}
