import fc from 'fast-check';
import type { ScanOptions, Storage, StorageTransaction, StoredValue } from '../storage/types.js';
import { compareUTF8 } from '../base/utf8.js';
import { expect } from './expect.js';

/** One check of the conformance suite: a name and a function that throws when the store fails it. */
export interface ConformanceCheck {
  /** What it checks, with its group: `scan > limit caps the entries returned: …`. */
  name: string;
  /** Resolves when the store passes; rejects (an `AssertionError`, or the store's own error) when not. */
  run(): Promise<void>;
}

/** Options for {@link storageConformance}. */
export interface ConformanceOptions {
  /** Cases per property check (fast-check). Default: 200. */
  runs?: number;
  /**
   * The store runs one transaction at a time (one connection, such as PGlite): it skips the
   * check that one space's reads and writes go on while another space's transaction waits.
   * Default: false.
   */
  oneAtATime?: boolean;
}

/**
 * The storage conformance suite: a check for every guarantee of {@link Storage}, each able to
 * fail when its guarantee is broken. Every store of viewsync passes it; run it against a store
 * of your own (Redis, DynamoDB, MySQL…) in any test runner, or none: each check is a name and a
 * function that throws on failure. Needs `fast-check` installed.
 *
 * `create` must return an empty store on every call (a new database, schema or table prefix).
 * Keys and values are well-formed strings (no lone surrogates), U+0000 included.
 *
 * @example
 * import { storageConformance } from 'viewsync/testing';
 * for (const check of storageConformance(() => myStorage())) test(check.name, check.run);
 */
export function storageConformance(create: () => Storage | Promise<Storage>, options: ConformanceOptions = {}): ConformanceCheck[] {
  const RUNS = options.runs ?? 200;
  const checks: ConformanceCheck[] = [];
  const groups: string[] = [];
  const describe = (group: string, body: () => void) => {
    groups.push(group);
    body();
    groups.pop();
  };
  const it = Object.assign((name: string, run: () => Promise<void>) => void checks.push({ name: [...groups, name].join(' > '), run }), {
    each: (rows: ReadonlyArray<readonly [string, boolean]>) => (name: string, run: (label: string, flag: boolean) => Promise<void>) => {
      for (const [label, flag] of rows) it(name.replace('%s', label), () => run(label, flag));
    },
  });
  {
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
        await putAll(storage, [['k', 1], ['l', 'other']]);
        await putAll(storage, [['k', { now: 2 }]]);
        expect(await read(storage, (tx) => tx.get('k'))).toEqual({ now: 2 });
        expect(await scan(storage, { prefix: '' })).toEqual([['k', { now: 2 }], ['l', 'other']]);
      });

      it('del removes a key from get and scan; deleting a missing key resolves and changes nothing', async () => {
        const storage = await create();
        await putAll(storage, [['a', 1], ['b', 2], ['c', 3]]);
        await storage.transaction(async (tx) => {
          await tx.del('b');
          await tx.del('missing');
          await tx.del('b');
        }, RW);
        expect(await read(storage, (tx) => tx.get('b'))).toBeUndefined();
        expect(await scan(storage, { prefix: '' })).toEqual([['a', 1], ['c', 3]]);
        await storage.transaction((tx) => tx.del('never-there'), RW);
        expect(await scan(storage, { prefix: '' })).toEqual([['a', 1], ['c', 3]]);
      });

      it('holds a key as long as its maxKeyBytes says, in UTF-8 bytes, with U+0000 and U+0001 counted twice, and lists many of them (skipped without maxKeyBytes)', async () => {
        const storage = await create();
        const max = storage.maxKeyBytes;
        if (max === undefined) return;
        // Characters no compression shrinks much, so that the bound is met as random keys meet it.
        const key = (seed: number, low: string) => Array.from({ length: max - 2 * low.length }, (_, i) => String.fromCharCode(48 + ((i * 7919 + seed * 104729) % 75))).join('') + low;
        const keys = [key(1, ''), key(2, '\u0000'), key(3, '\u0001\u0000')].sort(compareUTF8);
        await putAll(storage, keys.map((k, i) => [k, i]));
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
        await putAll(storage, [['a\u0000b', 'nul \u0000 inside'], ['a', 1], ['a\u0001', 2], ['a\u0000', 3]]);
        expect(await read(storage, (tx) => tx.get('a\u0000b'))).toBe('nul \u0000 inside');
        expect(keysOf(await scan(storage, { prefix: 'a' }))).toEqual(['a', 'a\u0000', 'a\u0000b', 'a\u0001']);
      });

      it('getMany, where a store has it, reads as get does: in order, missing keys undefined, own writes seen', async () => {
        const storage = await create();
        await putAll(storage, [['a', 1], ['b', { two: 2 }], ['c\u0000', 3]]);
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
            start: fc.option(fc.record({ key: keys.length === 0 ? text(3) : fc.oneof(text(3), fc.constantFrom(...keys)), exclusive: fc.boolean() }), { nil: undefined }),
            limit: fc.constantFrom(undefined, 0, 1, 3),
          });
        const keysAndReads = fc.uniqueArray(text(4), { maxLength: 12 }).chain((keys) => fc.tuple(fc.constant(keys), fc.array(read(keys), { minLength: 1, maxLength: 4 })));
        await fc.assert(
          fc.asyncProperty(keysAndReads, async ([keys, reads]) => {
            await clear(storage);
            await putAll(storage, keys.map((key, i) => [key, { i }]));
            const got = await storage.readMany!(reads, {});
            const want = await storage.transaction((tx) => Promise.all(reads.map((options) => tx.scan(options))), RO);
            expect(got.map((rows) => rows.map(([key, value]) => [key, value]))).toEqual(want.map((rows) => rows.map(([key, value]) => [key, value])));
          }),
          { numRuns: Math.min(RUNS, 50) },
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
        await putAll(storage, [['p/a', { one: [1, 'ü\u0000'] }], ['p/b', null], ['p/c\u0000', 'three'], ['q', 4]]);
        const both = (tx: StorageTransaction, options: ScanOptions) =>
          Promise.all([tx.scan(options), tx.scanText ? tx.scanText(options) : undefined]);
        for (const options of [{ prefix: 'p/' }, { prefix: 'p/', start: { key: 'p/a', exclusive: true }, limit: 1 }, { prefix: '' }]) {
          const [values, texts] = await storage.transaction((tx) => both(tx, options), RO);
          if (texts !== undefined) expect(texts.map(([key, text]) => [key, JSON.parse(text) as unknown])).toEqual(values);
        }
        const [values, texts] = await storage.transaction(async (tx) => {
          await tx.put('p/b', 'written');
          await tx.del('p/a');
          return both(tx, { prefix: 'p/' });
        }, RW);
        expect(values).toEqual([['p/b', 'written'], ['p/c\u0000', 'three']]);
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
          { numRuns: RUNS },
        );
      });
    });

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
        await putAll(storage, shuffled(keys).map((key) => [key, key]));
        const entries = await scan(storage, { prefix: 'u/' });
        expect(keysOf(entries)).toEqual([...keys].sort(compareBytes));
        expect(entries.every(([key, value]) => key === value)).toBe(true);
      });

      it('prefix and start compare in UTF-8 order', async () => {
        const storage = await create();
        await putAll(storage, shuffled(UNICODE_KEYS).map((key) => [key, key]));
        const sorted = [...UNICODE_KEYS].sort(compareBytes);
        const after = (start: string, exclusive: boolean) =>
          sorted.filter((key) => compareBytes(key, start) > (exclusive ? 0 : -1));
        // '😀' is a surrogate pair: below '\uFFFD' in UTF-16 units, above it in UTF-8 bytes.
        for (const [start, exclusive] of [['\uFFFD', false], ['\uFFFD', true], ['😀', false], ['😀', true], ['\uE000', true], ['a\uFFFF', true]] as const) {
          expect(keysOf(await scan(storage, { prefix: '', start: { key: start, exclusive } }))).toEqual(after(start, exclusive));
        }
        expect(keysOf(await scan(storage, { prefix: '😀', start: { key: '\uFFFD' } }))).toEqual(['😀', '😀a', '😀😀']);
        expect(keysOf(await scan(storage, { prefix: '\uFFFD', start: { key: '😀' } }))).toEqual([]);
        expect(keysOf(await scan(storage, { prefix: 'a', start: { key: 'a\uFFFF', exclusive: true } }))).toEqual(['a𝄞', 'a😀']);
      });

      it('any scan (prefix, start, exclusive, limit) returns the model entries in range, in UTF-8 order', async () => {
        const storage = await create();
        await putAll(storage, shuffled(UNICODE_KEYS).map((key) => [key, key]));
        const sorted = [...UNICODE_KEYS].sort(compareBytes);
        const bound = fc.constantFrom('', 'a', '😀', '\uFFFD', '\uE000', 'b', ...UNICODE_KEYS);
        // The start key is often the prefix itself or a key under it, where the edge cases are.
        const options = bound.chain((prefix) =>
          fc.record({
            prefix: fc.constant(prefix),
            start: fc.option(
              fc.record({
                key: fc.oneof(fc.constant(prefix), bound, fc.string({ unit: 'binary', maxLength: 2 }).map((s) => prefix + s)),
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
          { numRuns: RUNS },
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

    describe('transactions', () => {
      it('a transaction sees its own puts and dels, by get and by scan, before it commits', async () => {
        const storage = await create();
        await putAll(storage, [['a', 1], ['b', 2], ['c', 3]]);
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
        const expected = [['a', 10], ['c', 3], ['d', 4], ['\uFFFD', 7], ['😀', 6]];
        expect(seen).toEqual({ a: 10, b: undefined, d: 4, ab: undefined, all: expected, page: [['c', 3], ['d', 4]] });
        expect(await scan(storage, { prefix: '' })).toEqual(expected);
      });

      it('a callback that throws leaves no trace, and transaction rejects with its error', async () => {
        const storage = await create();
        const before = [['deleted', 'still here'], ['kept', 'original'], ['twice', 'original']] as const;
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
        await expect(storage.transaction(async (tx) => {
          await tx.put('k', 1);
          throw new Error('fail');
        }, RW)).rejects.toThrow('fail');
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
        await putAll(storage, [['snap/A', 0], ['snap/B', 0]]);
        const seen: Array<Promise<StoredValue[]>> = [];
        const jobs = writersOfBoth(storage, ['snap/A', 'snap/B'], () =>
          seen.push(storage.transaction(async (tx) => {
            const a = await tx.get('snap/A');
            await tick();
            const b = await tx.get('snap/B');
            await tick();
            return [a, b, await tx.get('snap/A')] as StoredValue[];
          }, { readOnly })),
        );
        await Promise.all(jobs);
        for (const [a, ...rest] of await Promise.all(seen)) expect(rest).toEqual([a, a]);
        // Whichever writer committed last: a store promises no order among concurrent writers.
        const final = await scan(storage, { prefix: 'snap/' });
        const last = final[0]?.[1];
        expect(final).toEqual([['snap/A', last], ['snap/B', last]]);
        expect(typeof last === 'number' && last >= 1 && last <= 20).toBe(true);
      });

      it('scans in one transaction read one committed state while writers update the range', async () => {
        const storage = await create();
        await putAll(storage, [['snap/A', 0], ['snap/B', 0]]);
        const seen: Array<Promise<StoredValue[]>> = [];
        const jobs = writersOfBoth(storage, ['snap/B', 'snap/A'], () =>
          seen.push(read(storage, async (tx) => {
            const first = await tx.scan({ prefix: 'snap/', limit: 1 });
            await tick();
            const rest = await tx.scan({ prefix: 'snap/', start: { key: first[0]![0], exclusive: true } });
            await tick();
            const all = await tx.scan({ prefix: 'snap/' });
            return [...first, ...rest, ...all].map(([, value]) => value);
          })),
        );
        await Promise.all(jobs);
        for (const values of await Promise.all(seen)) expect(values).toEqual(Array(4).fill(values[0]));
      });

      it('no transaction sees the writes of a transaction that fails', async () => {
        const storage = await create();
        await putAll(storage, [['A', 'clean'], ['B', 'clean']]);
        const jobs: Array<Promise<unknown>> = [];
        const seen: Array<Promise<Array<StoredValue | undefined>>> = [];
        for (let i = 0; i < 10; i++) {
          jobs.push(storage.transaction(async (tx) => {
            await tx.put('A', 'dirty');
            await tx.put('C', 'dirty');
            await tick();
            await tx.put('B', 'dirty');
            await tick();
            throw new Error('rolled back');
          }, RW).catch(() => undefined));
          for (const readOnly of [true, false]) {
            seen.push(storage.transaction(async (tx) => {
              const values = [await tx.get('A'), await tx.get('C')];
              await tick();
              values.push(await tx.get('B'), ...(await tx.scan({ prefix: '' })).map(([, value]) => value));
              return values;
            }, { readOnly }));
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
          { numRuns: RUNS },
        );
      });
    });

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

      if (!options.oneAtATime) it("another space's reads and writes go on while one space's transaction waits", async () => {
        const storage = await create();
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const slow = storage.transaction(async (tx) => {
          await tx.put('a/x', 1);
          await gate;
          await tx.put('a/y', 1);
        }, { readOnly: false, space: 'a' });
        await tick();
        const other = (async () => {
          await storage.transaction((tx) => tx.put('b/x', 1), { readOnly: false, space: 'b' });
          return storage.transaction((tx) => tx.get('b/x'), { readOnly: true, space: 'b' });
        })();
        const timeout = new Promise((resolve) => setTimeout(() => resolve('waited for space a'), 2_000));
        expect(await Promise.race([other, timeout])).toBe(1);
        release();
        await slow;
        expect(await scan(storage, { prefix: '' })).toEqual([['a/x', 1], ['a/y', 1], ['b/x', 1]]);
      });

      it("a transaction of no space sees a space's transaction whole or not at all", async () => {
        const storage = await create();
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const writing = storage.transaction(async (tx) => {
          await tx.put('a/x', 1);
          await gate;
          await tx.put('a/y', 1);
        }, { readOnly: false, space: 'a' });
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
  return checks;
}

/** Keys where UTF-8 and UTF-16 order disagree: surrogate pairs (above U+FFFF) against U+E000-U+FFFF. */
const UNICODE_KEYS = ['a', 'a\uFFFF', 'a😀', 'a𝄞', 'é', '\u0800', '\uD7FF', '\uE000', '\uFFFD', '\uFFFF', '😀', '😀a', '😀😀', '𝄞', '\u{10FFFF}'];

const RW = { readOnly: false };
const RO = { readOnly: true };

class Rollback extends Error {}

/** UTF-8 byte order, by encoding: an oracle apart from the compareUTF8 the stores use. */
function compareBytes(a: string, b: string): number {
  const [x, y] = [encoder.encode(a), encoder.encode(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

const encoder = new TextEncoder();

function sortedEntries(map: ReadonlyMap<string, StoredValue>): Array<[string, StoredValue]> {
  return [...map].sort(([a], [b]) => compareBytes(a, b));
}

async function putAll(storage: Storage, entries: ReadonlyArray<readonly [string, StoredValue]>): Promise<void> {
  await storage.transaction(async (tx) => {
    for (const [key, value] of entries) await tx.put(key, value);
  }, RW);
}

/** Removes every entry. */
async function clear(storage: Storage): Promise<void> {
  await storage.transaction(async (tx) => {
    for (const [key] of await tx.scan({ prefix: '' })) await tx.del(key);
  }, RW);
}

function read<T>(storage: Storage, fn: (tx: StorageTransaction) => Promise<T>): Promise<T> {
  return storage.transaction(fn, RO);
}

function scan(storage: Storage, options: ScanOptions): Promise<ReadonlyArray<readonly [string, StoredValue]>> {
  return read(storage, (tx) => tx.scan(options));
}

function keysOf(entries: ReadonlyArray<readonly [string, StoredValue]>): string[] {
  return entries.map(([key]) => key);
}

/** A fixed shuffle, so insertion order never matches key order yet failures reproduce. */
function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  let seed = 12345;
  for (let i = out.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = (seed >>> 8) % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * 20 read-write transactions, the i-th setting both `keys` to i, one, an await, then the other;
 * `alongside` runs as each starts (a reader to race them). Resolves to the writers.
 */
function writersOfBoth(storage: Storage, keys: readonly [string, string], alongside: () => void): Array<Promise<unknown>> {
  return Array.from({ length: 20 }, (_, n) => {
    const writing = storage.transaction(async (tx) => {
      await tx.put(keys[0], n + 1);
      await tick();
      await tx.put(keys[1], n + 1);
      await tick();
    }, RW);
    alongside();
    return writing;
  });
}

function tick(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
