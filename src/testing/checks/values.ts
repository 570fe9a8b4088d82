import fc from 'fast-check';
import type { ScanOptions, StorageTransaction, StoredValue } from '../../storage/types.js';
import { compareUTF8 } from '../../base/utf8.js';
import { expect } from '../expect.js';
import { RW, RO, putAll, clear, read, scan, keysOf, type Suite } from './suite.js';

/** The checks of get, put and del: what a key holds, and what it reads back as. */
export function valuesChecks({ describe, it, create, runs }: Suite): void {
  describe('get, put and del', () => {
    it('a stored null reads as null, a missing key as undefined', async () => {
      const storage = await create();
      await putAll(storage, [['n', null]]);
      expect(await read(storage, (tx) => tx.get('n'))).toBeNull();
      expect(await read(storage, (tx) => tx.get('missing'))).toBeUndefined();
      expect(await read(storage, (tx) => tx.get('n/'))).toBeUndefined();
    });

    it('a committed put is read back by later transactions, which resolve with their callback result', async () => {
      const storage = await create();
      const result = await storage.transaction(async (tx) => {
        await tx.put('k', 'v');
        return { done: 1 };
      }, RW);
      expect(result).toEqual({ done: 1 });
      expect(await read(storage, (tx) => tx.get('k'))).toBe('v');
      expect(await storage.transaction((tx) => tx.get('k'), RW)).toBe('v');
    });

    it('put over an existing key replaces its value', async () => {
      const storage = await create();
      await putAll(storage, [
        ['k', 1],
        ['l', 'other'],
      ]);
      await putAll(storage, [['k', { now: 2 }]]);
      expect(await read(storage, (tx) => tx.get('k'))).toEqual({ now: 2 });
      expect(await scan(storage, { prefix: '' })).toEqual([
        ['k', { now: 2 }],
        ['l', 'other'],
      ]);
    });

    it('del removes a key from get and scan; deleting a missing key resolves and changes nothing', async () => {
      const storage = await create();
      await putAll(storage, [
        ['a', 1],
        ['b', 2],
        ['c', 3],
      ]);
      await storage.transaction(async (tx) => {
        await tx.del('b');
        await tx.del('missing');
        await tx.del('b');
      }, RW);
      expect(await read(storage, (tx) => tx.get('b'))).toBeUndefined();
      expect(await scan(storage, { prefix: '' })).toEqual([
        ['a', 1],
        ['c', 3],
      ]);
      await storage.transaction((tx) => tx.del('never-there'), RW);
      expect(await scan(storage, { prefix: '' })).toEqual([
        ['a', 1],
        ['c', 3],
      ]);
    });

    it('holds a key as long as its maxKeyBytes says, in UTF-8 bytes, with U+0000 and U+0001 counted twice, and lists many of them (skipped without maxKeyBytes)', async () => {
      const storage = await create();
      const max = storage.maxKeyBytes;
      if (max === undefined) return;
      // Characters no compression shrinks much, so that the bound is met as random keys meet it.
      const key = (seed: number, low: string) =>
        Array.from({ length: max - 2 * low.length }, (_, i) => String.fromCharCode(48 + ((i * 7919 + seed * 104729) % 75))).join('') + low;
      const keys = [key(1, ''), key(2, '\u0000'), key(3, '\u0001\u0000')].sort(compareUTF8);
      await putAll(
        storage,
        keys.map((k, i) => [k, i]),
      );
      expect(await scan(storage, { prefix: '' })).toEqual(keys.map((k, i) => [k, i]));
    });

    it('values round-trip as equal JSON: nested objects, arrays, unicode, numbers, null, booleans', async () => {
      const storage = await create();
      const values: StoredValue[] = [
        null,
        true,
        false,
        0,
        -1,
        42,
        -273.15,
        0.1,
        1e300,
        -5e-324,
        Number.MAX_SAFE_INTEGER,
        '',
        'plain',
        'quotes " and \\ backslash\n newline \t tab',
        'é ß 漢字 😀 𝄞 \uFFFD \uE000 \uFFFF \u{10FFFF}',
        [],
        [1, 'two', null, [true, [false]], { three: 3 }],
        {},
        { nested: { deeper: { deepest: ['x', { y: -0.5 }] } }, 'key with 😀': '\uFFFD', '': 'empty key' },
      ];
      const entries = values.map((value, i) => [`v/${String(i).padStart(2, '0')}`, value] as const);
      await putAll(storage, entries);
      for (const [key, value] of entries) expect(await read(storage, (tx) => tx.get(key))).toEqual(value);
      expect(await scan(storage, { prefix: 'v/' })).toEqual(entries);
    });

    it('keys and values containing U+0000 round-trip, and such keys sort by their bytes', async () => {
      const storage = await create();
      await putAll(storage, [
        ['a\u0000b', 'nul \u0000 inside'],
        ['a', 1],
        ['a\u0001', 2],
        ['a\u0000', 3],
      ]);
      expect(await read(storage, (tx) => tx.get('a\u0000b'))).toBe('nul \u0000 inside');
      expect(keysOf(await scan(storage, { prefix: 'a' }))).toEqual(['a', 'a\u0000', 'a\u0000b', 'a\u0001']);
    });

    it('getMany, where a store has it, reads as get does: in order, missing keys undefined, own writes seen', async () => {
      const storage = await create();
      await putAll(storage, [
        ['a', 1],
        ['b', { two: 2 }],
        ['c\u0000', 3],
      ]);
      const keys = ['b', 'missing', 'a', 'c\u0000', 'a'];
      const expected = [{ two: 2 }, undefined, 1, 3, 1];
      const { viaMany, viaGet } = await storage.transaction(async (tx) => {
        await tx.put('new', 'n');
        await tx.del('a');
        const all = [...keys, 'new'];
        return { viaMany: tx.getMany ? await tx.getMany(all) : undefined, viaGet: await Promise.all(all.map((key) => tx.get(key))) };
      }, RW);
      expect(viaGet).toEqual([{ two: 2 }, undefined, undefined, 3, undefined, 'n']);
      if (viaMany !== undefined) expect(viaMany).toEqual(viaGet);
      const read = await storage.transaction(async (tx) => (tx.getMany ? tx.getMany(keys) : Promise.all(keys.map((key) => tx.get(key)))), RO);
      expect(read).toEqual(expected.map((value, i) => (keys[i] === 'a' ? undefined : value)));
    });

    it('readMany, where a store has it, reads each range as scan does and each joined key as get does, in one snapshot', async () => {
      const storage = await create();
      if (storage.readMany === undefined) return;
      const unit = fc.constantFrom('a', 'b', '/', '\u0000', '\u0001', 'é', '\u{1F600}', '\u{10FFFF}');
      const text = (max: number) => fc.array(unit, { maxLength: max }).map((units) => units.join(''));
      // Reads start at a stored key half the time: an exclusive start must then leave it out.
      const read = (keys: string[]) =>
        fc.record({
          prefix: text(2),
          start: fc.option(fc.record({ key: keys.length === 0 ? text(3) : fc.oneof(text(3), fc.constantFrom(...keys)), exclusive: fc.boolean() }), {
            nil: undefined,
          }),
          limit: fc.constantFrom(undefined, 0, 1, 3),
        });
      const keysAndReads = fc
        .uniqueArray(text(4), { maxLength: 12 })
        .chain((keys) => fc.tuple(fc.constant(keys), fc.array(read(keys), { minLength: 1, maxLength: 4 })));
      await fc.assert(
        fc.asyncProperty(keysAndReads, async ([keys, reads]) => {
          await clear(storage);
          await putAll(
            storage,
            keys.map((key, i) => [key, { i }]),
          );
          const got = await storage.readMany!(reads, {});
          const want = await storage.transaction((tx) => Promise.all(reads.map((options) => tx.scan(options))), RO);
          expect(got.map((rows) => rows.map(([key, value]) => [key, value]))).toEqual(want.map((rows) => rows.map(([key, value]) => [key, value])));
        }),
        { numRuns: Math.min(runs, 50) },
      );
      // An index (`x<anything>/<two ASCII characters>/<target>`) joined with the targets under `t`.
      await clear(storage);
      const targets = ['', 'a', '\u0000b', 'é\u{1F600}', 'missing'];
      await putAll(storage, [
        ...targets.map((target, i): [string, StoredValue] => [`x\u0000é/0${i}/${target}`, null]),
        ...targets.filter((target) => target !== 'missing').map((target): [string, StoredValue] => [`t${target}`, { target }]),
      ]);
      const [joined] = await storage.readMany([{ prefix: 'x\u0000é/', join: { prefix: 't', skip: 3 } }], {});
      expect(joined).toEqual(targets.map((target, i) => [`x\u0000é/0${i}/${target}`, null, target === 'missing' ? undefined : { target }]));
    });

    it('scanText, where a store has it, returns what scan does with each value as its JSON text, own writes included', async () => {
      const storage = await create();
      await putAll(storage, [
        ['p/a', { one: [1, 'ü\u0000'] }],
        ['p/b', null],
        ['p/c\u0000', 'three'],
        ['q', 4],
      ]);
      const both = (tx: StorageTransaction, options: ScanOptions) => Promise.all([tx.scan(options), tx.scanText ? tx.scanText(options) : undefined]);
      for (const options of [{ prefix: 'p/' }, { prefix: 'p/', start: { key: 'p/a', exclusive: true }, limit: 1 }, { prefix: '' }]) {
        const [values, texts] = await storage.transaction((tx) => both(tx, options), RO);
        if (texts !== undefined) expect(texts.map(([key, text]) => [key, JSON.parse(text) as unknown])).toEqual(values);
      }
      const [values, texts] = await storage.transaction(async (tx) => {
        await tx.put('p/b', 'written');
        await tx.del('p/a');
        return both(tx, { prefix: 'p/' });
      }, RW);
      expect(values).toEqual([
        ['p/b', 'written'],
        ['p/c\u0000', 'three'],
      ]);
      if (texts !== undefined) expect(texts.map(([key, text]) => [key, JSON.parse(text) as unknown])).toEqual(values);
    });

    it('any JSON value put is read back equal, by get and by scan', async () => {
      const storage = await create();
      // -0 goes through JSON as 0, so a serialising store may return 0: normalise the input.
      const jsonValue = fc.jsonValue({ stringUnit: 'binary' }).map((v) => JSON.parse(JSON.stringify(v)) as StoredValue);
      await fc.assert(
        fc.asyncProperty(jsonValue, async (value) => {
          await putAll(storage, [['value', value]]);
          expect(await read(storage, (tx) => tx.get('value'))).toEqual(value);
          expect(await scan(storage, { prefix: 'value' })).toEqual([['value', value]]);
        }),
        { numRuns: runs },
      );
    });
  });
}
