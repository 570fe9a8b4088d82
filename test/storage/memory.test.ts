import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage } from '../../src/index.js';
import type { StorageScanOptions } from '../../src/store.js';
import { SortedKeys } from '../../src/storage/sorted-keys.js';
import { describeStorageConformance } from './conformance.js';

describeStorageConformance('memoryStorage', () => memoryStorage());

describe('memoryStorage with many keys', () => {
  it('20,000 keys put in random order scan back in UTF-8 order, page by page, and deleting them all empties it', async () => {
    const storage = memoryStorage();
    const chars = ['a', 'é', '\uE000', '\uFFFD', '😀', '𝄞'];
    const keys = Array.from({ length: 20_000 }, (_, i) => `${chars[i % chars.length]}${(i * 7919) % 20_000}/${i}`);
    const sorted = [...keys].sort(compareBytes);
    const rw = { readOnly: false };
    const scanKeys = (options: StorageScanOptions) => storage.transaction(async (tx) => (await tx.scan(options)).map(([key]) => key), { readOnly: true });

    await storage.transaction(async (tx) => {
      for (const key of shuffled(keys)) await tx.put(key, key);
    }, rw);
    expect(await scanKeys({ prefix: '' })).toEqual(sorted);
    // Starts spread over the whole range cross chunk boundaries at every offset.
    for (let i = 0; i < sorted.length; i += 97) {
      expect(await scanKeys({ prefix: '', start: { key: sorted[i]!, exclusive: true }, limit: 3 })).toEqual(sorted.slice(i + 1, i + 4));
      expect(await scanKeys({ prefix: '', start: { key: sorted[i]! }, limit: 2 })).toEqual(sorted.slice(i, i + 2));
    }

    const order = shuffled(keys);
    await storage.transaction(async (tx) => {
      for (const key of order.slice(0, 10_000)) await tx.del(key);
    }, rw);
    const gone = new Set(order.slice(0, 10_000));
    expect(await scanKeys({ prefix: '' })).toEqual(sorted.filter((key) => !gone.has(key)));
    await storage.transaction(async (tx) => {
      for (const key of order.slice(10_000)) await tx.del(key);
    }, rw);
    expect(await scanKeys({ prefix: '' })).toEqual([]);
    await storage.transaction((tx) => tx.put('again', 1), rw);
    expect(await scanKeys({ prefix: '' })).toEqual(['again']);
  });

  it('rolling back 5,000 puts over 5,000 keys restores every key and its value', async () => {
    const storage = memoryStorage();
    const keys = Array.from({ length: 10_000 }, (_, i) => `k/${(i * 7919) % 10_000}`);
    const before = keys.slice(0, 5_000).map((key) => [key, key] as const);
    await storage.transaction(
      async (tx) => {
        for (const [key, value] of before) await tx.put(key, value);
      },
      { readOnly: false },
    );
    await expect(
      storage.transaction(
        async (tx) => {
          for (const key of keys) await tx.put(key, 'new');
          for (const key of keys.slice(2_500, 7_500)) await tx.del(key);
          throw new Error('roll back');
        },
        { readOnly: false },
      ),
    ).rejects.toThrow('roll back');
    const entries = await storage.transaction((tx) => tx.scan({ prefix: '' }), { readOnly: true });
    expect(entries).toEqual([...before].sort(([a], [b]) => compareBytes(a, b)));
  });
});

describe('SortedKeys', () => {
  it('after any adds and deletes, from(start) yields exactly the live keys at or after start, in UTF-8 order', () => {
    // Ops come from a seeded generator rather than an fc.array: crossing the 512-key chunk size
    // needs thousands of ops, far too many for fast-check to shrink one by one; `count` shrinks instead.
    const alphabet = ['a', 'b', 'é', '\uE000', '\uFFFD', '😀', '𝄞'];
    const pool = allStrings(alphabet, 4);
    const key = fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 4 });
    fc.assert(
      fc.property(fc.nat(4000), fc.noShrink(fc.nat()), fc.nat(60), key, fc.boolean(), (count, seed, deletePercent, start, exclusive) => {
        const keys = new SortedKeys();
        const model = new Set<string>();
        const random = seeded(seed);
        for (let i = 0; i < count; i++) {
          const key = pool[random() % pool.length]!;
          if (random() % 100 < deletePercent) {
            keys.delete(key);
            model.delete(key);
          } else {
            keys.add(key);
            model.add(key);
          }
        }
        const sorted = [...model].sort(compareBytes);
        expect([...keys.from('', false)]).toEqual(sorted);
        expect([...keys.from(start, exclusive)]).toEqual(sorted.filter((k) => compareBytes(k, start) > (exclusive ? 0 : -1)));
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 200) },
    );
  });
});

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** A fixed shuffle, so insertion order never matches key order yet failures reproduce. */
function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  const random = seeded(42);
  for (let i = out.length - 1; i > 0; i--) {
    const j = random() % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** A small deterministic generator of non-negative integers. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) >>> 8;
}

/** Every string of 1 to `maxLength` units drawn from `alphabet`. */
function allStrings(alphabet: readonly string[], maxLength: number): string[] {
  let level = [''];
  const out: string[] = [];
  for (let n = 0; n < maxLength; n++) {
    level = level.flatMap((s) => alphabet.map((c) => s + c));
    out.push(...level);
  }
  return out;
}
