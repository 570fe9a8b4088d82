import { describe, expect, it } from 'vitest';
import { memoryStorage, type Storage } from '../../src/index.js';
import { compareUTF8 } from '../../src/store.js';
import { AssertionError, storageConformance } from '../../src/testing/index.js';
import { expect as check } from '../../src/testing/expect.js';

/** The names of the checks `storage` fails. */
async function failures(create: () => Storage): Promise<string[]> {
  const failed: string[] = [];
  for (const { name, run } of storageConformance(create, { runs: 20 })) {
    try {
      await run();
    } catch {
      failed.push(name);
    }
  }
  return failed;
}

describe('viewsync/testing: the conformance suite fails stores that break the contract', () => {
  it('a correct store passes every check', async () => {
    expect(await failures(() => memoryStorage())).toEqual([]);
  });

  it('a store that orders keys by UTF-16 code units fails the ordering checks', async () => {
    const utf16 = (): Storage => {
      const inner = memoryStorage();
      return {
        transaction: (fn, options) =>
          inner.transaction(
            (tx) =>
              fn({
                ...tx,
                get: tx.get,
                put: tx.put,
                del: tx.del,
                scan: async (o) => [...(await tx.scan({ ...o, limit: undefined }))].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, o.limit),
              }),
            options,
          ),
      };
    };
    expect(await failures(utf16)).toContain('scan > keys order by their UTF-8 bytes, not by UTF-16 code units');
  });

  it('a store without rollback fails atomicity, and one without isolation fails serialisability', async () => {
    // Writes straight into a shared map, with no undo and no lock.
    const naive = (): Storage => {
      const map = new Map<string, unknown>();
      return {
        async transaction(fn) {
          return fn({
            get: async (key) => map.get(key) as never,
            put: async (key, value) => void map.set(key, value),
            del: async (key) => void map.delete(key),
            scan: async ({ prefix, limit = Infinity }) =>
              [...map]
                .filter(([key]) => key.startsWith(prefix))
                .sort(([a], [b]) => compareUTF8(a, b))
                .slice(0, limit) as never,
          });
        },
      };
    };
    const failed = await failures(naive);
    expect(failed).toContain('transactions > a callback that throws leaves no trace, and transaction rejects with its error');
    expect(failed).toContain(
      'transactions > read-write transactions are serialised: 50 concurrent increments with awaits each read a different count and give 50',
    );
  });

  it('its assertions throw AssertionErrors that show both sides', async () => {
    expect(() => check([1, { a: 2 }]).toEqual([1, { a: 3 }])).toThrow(new AssertionError('expected [1,{"a":2}] to equal [1,{"a":3}]'));
    check({ a: 1, b: undefined }).toEqual({ a: 1 });
    expect(() => check(1).toBe(2)).toThrow(AssertionError);
    await expect(check(Promise.resolve(1)).rejects.toThrow()).rejects.toThrow(/to reject, it resolved/);
    await check(Promise.reject(new Error('boom'))).rejects.toThrow('boom');
  });
});
