/**
 * Runs in workerd (the `workerd` project of vitest.config.ts): the Durable Object store over a
 * real object's SQLite storage. Every transaction runs inside its object, through
 * `runInDurableObject`, as a request to that object would.
 */
import { abortAllDurableObjects, env, runInDurableObject } from 'cloudflare:test';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { durableObjectStorage } from '../../src/storage/durable-object.js';
import type { ScanOptions, Storage, StorageTransaction, StoredValue } from '../../src/storage/types.js';
import { describeBackend } from '../backend/suite.js';
import { describeHousekeeping } from '../housekeeping/suite.js';
import { describeFeed } from '../feed/suite.js';
import { describeHistory } from '../history/suite.js';
import { describeStorageConformance } from './conformance.js';
import type { StorageObject } from './durable-object.worker.js';

describeStorageConformance('durableObjectStorage', () => objectStorage(newObject()), { lanesApart: true });
describeHousekeeping('durableObjectStorage', () => objectStorage(newObject()));
describeFeed('durableObjectStorage', () => objectStorage(newObject()), 20);
describeBackend(
  'durableObjectStorage',
  () => objectStorage(newObject()),
  (body) => runInDurableObject(newObject(), ({ storage }: StorageObject) => body(storage)),
);
// Inside the object: an export's stream cannot cross Durable Objects in workerd.
describeHistory(
  'durableObjectStorage',
  () => objectStorage(newObject()),
  (body) => runInDurableObject(newObject(), ({ storage }: StorageObject) => body(storage)),
);

describe('durableObjectStorage in a Durable Object', () => {
  it('a read-only transaction does not wait for a read-write one that is awaiting, nor see its writes', async () => {
    const seen = await runInDurableObject(newObject(), async ({ storage }: StorageObject) => {
      await storage.transaction((tx) => tx.put('k', 1), RW);
      let resume!: () => void;
      const paused = new Promise<void>((resolve) => (resume = resolve));
      const writing = storage.transaction(async (tx) => {
        await tx.put('k', 2);
        await paused;
      }, RW);
      const reading = storage.transaction((tx) => tx.get('k'), RO);
      const during = await Promise.race([reading, delay(2_000, 'the reader waited for the writer')]);
      resume();
      await writing;
      return [during, await storage.transaction((tx) => tx.get('k'), RO)];
    });
    expect(seen).toEqual([1, 2]);
  });

  it('any scan inside a read-write transaction returns its writes merged with the table, in UTF-8 order', async () => {
    const stub = newObject();
    const base = new Map(KEYS.filter((_, i) => i % 2 === 0).map((key) => [key, `base ${key}`] as [string, StoredValue]));
    await runInDurableObject(stub, ({ storage }: StorageObject) =>
      storage.transaction(async (tx) => {
        for (const [key, value] of base) await tx.put(key, value);
      }, RW),
    );
    const op = fc.record({ key: fc.constantFrom(...KEYS), value: fc.option(fc.nat(9), { nil: undefined, freq: 2 }) });
    const bound = fc.constantFrom('', 'a', 'a\uD7FF', 'a\uFFFF', 'a\u{10FFFF}', '\u{10FFFF}', 'b', ...KEYS);
    const options = fc.record({
      prefix: bound,
      start: fc.option(fc.record({ key: bound, exclusive: fc.boolean() }), { nil: undefined }),
      limit: fc.option(fc.nat(6), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 12 }), options, async (ops, scan) => {
        const model = new Map(base);
        for (const { key, value } of ops) {
          if (value === undefined) model.delete(key);
          else model.set(key, value);
        }
        const got = await runInDurableObject(stub, ({ storage }: StorageObject) =>
          storage
            .transaction(async (tx) => {
              for (const { key, value } of ops) await (value === undefined ? tx.del(key) : tx.put(key, value));
              throw new Rollback(await tx.scan(scan));
            }, RW)
            .catch((error: unknown) => (error as Rollback).entries),
        );
        expect(got).toEqual(expectedScan(model, scan));
      }),
      { numRuns: RUNS },
    );
  });

  it('a prefix ending in U+D7FF, U+FFFF or U+10FFFF keeps exactly the keys under it', async () => {
    const storage = objectStorage(newObject());
    await storage.transaction(async (tx) => {
      for (const key of KEYS) await tx.put(key, key);
    }, RW);
    for (const prefix of ['a\uD7FF', 'a\uFFFF', 'a\u{10FFFF}', 'a\u{10FFFF}\u{10FFFF}', '\u{10FFFF}']) {
      const keys = (await storage.transaction((tx) => tx.scan({ prefix }), RO)).map(([key]) => key);
      expect(keys).toEqual(KEYS.filter((key) => key.startsWith(prefix)).sort(compareBytes));
    }
  });

  it('commits reach SQLite: an object restarted from its storage reads them back', async () => {
    const id = env.STORAGE.newUniqueId();
    await runInDurableObject(env.STORAGE.get(id), ({ storage }: StorageObject) =>
      storage.transaction(async (tx) => {
        await tx.put('kept', { nested: ['ü🙂'] });
        await tx.put('gone', 1);
        await tx.del('gone');
      }, RW),
    );
    await abortAllDurableObjects();
    const after = await runInDurableObject(env.STORAGE.get(id), async ({ storage, state }: StorageObject) => ({
      entries: await storage.transaction((tx) => tx.scan({ prefix: '' }), RO),
      rows: state.storage.sql.exec('SELECT key, value FROM viewsync_kv').toArray(),
    }));
    expect(after).toEqual({ entries: [['kept', { nested: ['ü🙂'] }]], rows: [{ key: 'kept', value: '{"nested":["ü🙂"]}' }] });
  });

  it('refuses keys with a lone surrogate, which SQLite text cannot hold, and writes nothing', async () => {
    const storage = objectStorage(newObject());
    const refused = storage.transaction(async (tx) => {
      await tx.put('fine', 1);
      await tx.put('lone \uD800', 2);
    }, RW);
    await expect(refused).rejects.toThrow(/lone surrogate/);
    const reads: Array<(tx: StorageTransaction) => Promise<unknown>> = [(tx) => tx.get('\uDC00'), (tx) => tx.scan({ prefix: '', start: { key: 'x\uD83D' } })];
    for (const read of reads) await expect(storage.transaction(read, RO)).rejects.toThrow(/lone surrogate/);
    expect(await storage.transaction((tx) => tx.scan({ prefix: '' }), RO)).toEqual([]);
  });

  it('gives one store per storage, so that every caller shares its locks', async () => {
    const same = await runInDurableObject(newObject(), ({ storage, state }: StorageObject) => durableObjectStorage(state.storage) === storage);
    expect(same).toBe(true);
  });
});

/** Keys at the edges of the prefix ranges: U+D7FF before U+E000, U+FFFF, U+10FFFF, pairs. */
const KEYS = [
  'a',
  'a\uD7FF',
  'a\uD7FFz',
  'a\uE000',
  'a\uFFFF',
  'a\uFFFFz',
  'a😀',
  'a\u{10FFFF}',
  'a\u{10FFFF}z',
  'a\u{10FFFF}\u{10FFFF}',
  'b',
  '\u{10FFFF}',
  '\u{10FFFF}a',
];

const RUNS = Number(process.env.FC_RUNS ?? 200);
const RW = { readOnly: false };
const RO = { readOnly: true };

class Rollback extends Error {
  constructor(readonly entries: unknown) {
    super('rolled back');
  }
}

function newObject(): unknown {
  return env.STORAGE.get(env.STORAGE.newUniqueId());
}

/** A store whose every transaction runs inside the object, as that object's own would, in call order. */
function objectStorage(stub: unknown): Storage {
  let turns = 0;
  return {
    transaction(fn, options) {
      const turn = turns++;
      return runInDurableObject(stub, (object: StorageObject) => object.inTurn(turn, () => object.storage.transaction(fn, options)));
    },
  };
}

function expectedScan(model: ReadonlyMap<string, StoredValue>, { prefix, start, limit }: ScanOptions): Array<[string, StoredValue]> {
  return [...model]
    .filter(([key]) => key.startsWith(prefix) && (start === undefined || compareBytes(key, start.key) > (start.exclusive ? 0 : -1)))
    .sort(([a], [b]) => compareBytes(a, b))
    .slice(0, limit);
}

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function delay<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(resolve, ms, value));
}
