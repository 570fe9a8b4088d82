/**
 * Quotas per space (SyncContext.quotas) on every store: a mutation that would take its space over
 * fails as a mutator's error would, and the counters they read stay exact whoever writes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { emit, type JSONValue, type Storage, type SyncContext, createContext, type WriteTransaction } from '../../src/index.js';
import { mutate, transact } from '../../src/backend.js';
import { collectGarbage, importSpace, inspect, QuotaExceededError, type SpaceQuota } from '../../src/ops.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import type { Meta } from '../../src/sync/version/records.js';
import { mutation, pull, push, testMutators } from '../support/helpers.js';
import { onEveryStore } from '../support/stores.js';

const RUNS = Math.min(Number(process.env.FC_RUNS ?? 100), 100);

/** The counters the space's meta record holds. */
async function counters(storage: Storage, space = ''): Promise<{ entries?: number | undefined; bytes?: number | undefined }> {
  const meta = (await storage.transaction((tx) => tx.get(new SpaceKeys(space).meta), { readOnly: true })) as Meta | undefined;
  // A space never written has no record: it holds nothing.
  return meta === undefined ? { entries: 0, bytes: 0 } : { entries: meta.entries, bytes: meta.bytes };
}

/** The history counter the space's meta record holds. */
async function historyCounter(storage: Storage, space = ''): Promise<number | undefined> {
  const meta = (await storage.transaction((tx) => tx.get(new SpaceKeys(space).meta), { readOnly: true })) as Meta | undefined;
  return meta === undefined ? 0 : meta.history;
}

/** The counters against a recount: inspect reads every entry, tombstone and row of the log. */
async function expectExact(ctx: SyncContext, space = ''): Promise<void> {
  const { entries, bytes, history } = await inspect(ctx, space);
  expect(await counters(ctx.storage, space)).toEqual({ entries, bytes });
  expect(await historyCounter(ctx.storage, space)).toBe(history);
}

onEveryStore('quotas', (store, create) => {
  describe(`quotas: ${store}`, () => {
    function context(quotas: SyncContext['quotas']) {
      const errors: Array<{ error: unknown; mutationID: number | undefined }> = [];
      const ctx: SyncContext = createContext({
        storage: create(),
        mutators: testMutators,
        quotas,
        onError: (error, info) => errors.push({ error, mutationID: info.mutation?.id }),
      });
      return { ctx, errors };
    }
    const put = (id: number, key: string, value: JSONValue) => mutation('c', id, 'put', { key, value });
    const del = (id: number, key: string) => mutation('c', id, 'del', { key });

    it('a mutation that would pass the entry quota is skipped with the reason in onError; the next of the same push applies', async () => {
      const { ctx, errors } = context({ entries: 2 });
      await push(ctx, 'g', [put(1, 'a', 1), put(2, 'b', 2), put(3, 'c', 3), put(4, 'a', 10)]);
      const pulled = await pull(ctx, 'g', null);
      expect(pulled.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'a', value: 10 }, { op: 'put', key: 'b', value: 2 }]);
      // Skipped like a mutator's error: its client's lastMutationID still moves past it.
      expect(pulled.lastMutationIDChanges).toEqual({ c: 4 });
      expect(errors).toHaveLength(1);
      expect(errors[0]!.mutationID).toBe(3);
      expect(errors[0]!.error).toBeInstanceOf(QuotaExceededError);
      expect(String((errors[0]!.error as Error).message)).toBe(
        'QuotaExceeded: space "" would hold 3 entries, over its quota of 2 (quotas.entries); deletes and shrinking writes are still allowed',
      );
    });

    it('a byte quota refuses a growing write and allows a shrinking one; keys and JSON values count in UTF-8', async () => {
      // "k" + "\"é\"" is 1 + 4 bytes.
      const { ctx, errors } = context({ bytes: 5 });
      await push(ctx, 'g', [put(1, 'k', 'é'), put(2, 'k', 'éé'), put(3, 'k', 'e')]);
      expect((await pull(ctx, 'g', null)).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'k', value: 'e' }]);
      expect(errors.map(({ mutationID }) => mutationID)).toEqual([2]);
      expect((errors[0]!.error as QuotaExceededError).quota).toBe('bytes');
      expect(await counters(ctx.storage)).toEqual({ entries: 1, bytes: 4 });
    });

    it('a space over its quota (lowered since) may still delete and shrink, and grows again only once under', async () => {
      const quota: SpaceQuota = { entries: 10 };
      const { ctx, errors } = context((space) => (space === '' ? quota : undefined));
      await push(ctx, 'g', [put(1, 'a', 'long value'), put(2, 'b', 2), put(3, 'c', 3)]);
      quota.entries = 1;
      await push(ctx, 'g', [put(4, 'a', 's'), del(5, 'b'), put(6, 'd', 4), del(7, 'c'), put(8, 'd', 4)]);
      expect((await pull(ctx, 'g', null)).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'a', value: 's' }]);
      // Only the put of `d` while three, then two entries were there; deletes and the shrink went through.
      expect(errors.map(({ mutationID }) => mutationID)).toEqual([6, 8]);
      await expectExact(ctx);
    });

    it('transact and mutate reject with QuotaExceededError and write nothing; other spaces have their own quota', async () => {
      const { ctx } = context({ entries: 1 });
      await transact(ctx, 'x', (tx) => tx.set('a', 1));
      await expect(transact(ctx, 'x', (tx) => tx.set('b', 2))).rejects.toBeInstanceOf(QuotaExceededError);
      await expect(mutate(ctx, 'x', 'put', { key: 'b', value: 2 })).rejects.toThrow(/space "x" would hold 2 entries/);
      await transact(ctx, 'y', (tx) => tx.set('b', 2));
      expect((await inspect(ctx, 'x')).entries).toBe(1);
      expect((await inspect(ctx)).spaces.map(({ space, entries, quota }) => ({ space, entries, quota }))).toEqual([
        { space: 'x', entries: 1, quota: { entries: 1 } },
        { space: 'y', entries: 1, quota: { entries: 1 } },
      ]);
    });

    it('a write of several keys counts each against the value it replaces, in one read', async () => {
      const { ctx } = context({ bytes: 20 });
      await transact(ctx, '', (tx) => tx.set('a', 'xxxxxxxx'));
      // a shrinks from 1 + 10 bytes to 1 + 2, b (1 + 1) and ccc (3 + 5) are new: 13 bytes.
      await transact(ctx, '', async (tx) => {
        await tx.set('a', '');
        await tx.set('b', 1);
        await tx.set('ccc', 22222);
      });
      expect(await counters(ctx.storage)).toEqual({ entries: 3, bytes: 13 });
      // ccc grows by 5 and d (1 + 4) is new: 23. Keys of different lengths, one of them new, so
      // that a value counted against the wrong key would give another sum.
      await expect(
        transact(ctx, '', async (tx) => {
          await tx.set('ccc', 'yyyyyyyy');
          await tx.set('d', 'zz');
        }),
      ).rejects.toThrow(/would hold 23 bytes of keys and values, over its quota of 20/);
    });

    it('counters (history too, with the change log on or off) equal a recount after any puts, overwrites and deletes, by pushes and backend calls', async () => {
      const key = fc.constantFrom('a', 'b', 'c', 'é', '🙂', 'd/1');
      const value = fc.oneof(
        fc.integer(),
        fc.string({ unit: 'binary', maxLength: 8 }),
        fc.dictionary(fc.string({ maxLength: 3 }), fc.boolean(), { maxKeys: 3 }),
        fc.constant(null),
      );
      const write = fc.oneof(fc.record({ key, value }), fc.record({ key, value: fc.constant(undefined) }));
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ by: fc.constantFrom('push', 'transact'), writes: fc.array(write, { minLength: 1, maxLength: 4 }) }), { maxLength: 8 }),
          fc.boolean(),
          async (steps, feed) => {
            const ctx: SyncContext = createContext({ storage: create(), mutators: testMutators, onError: () => {}, ...(feed && { changes: {} }) });
            let id = 0;
            for (const { by, writes } of steps) {
              if (by === 'transact') {
                await transact(ctx, '', async (tx) => {
                  for (const w of writes) await (w.value === undefined ? tx.del(w.key) : tx.set(w.key, w.value));
                });
              } else {
                await push(
                  ctx,
                  'g',
                  writes.map((w) => (w.value === undefined ? del(++id, w.key) : put(++id, w.key, w.value))),
                );
              }
            }
            if (steps.length > 0) await expectExact(ctx);
          },
        ),
        { numRuns: store === 'memoryStorage' ? RUNS : Math.ceil(RUNS / 5) },
      );
    });

    it('counters stay exact through importSpace (replace and merge), events and housekeeping', async () => {
      const clock = { now: 1_800_000_000_000 };
      const ctx: SyncContext = createContext({
        storage: create(),
        mutators: testMutators,
        clock: () => clock.now,
        retention: { tombstonesMs: 1_000, clientGroupsMs: 1_000, changesMs: 1_000 },
        onError: () => {},
        changes: {},
      });
      await transact(ctx, '', async (tx) => void (await emit(tx, 'noted', { by: 'backend', é: '🙂' })));
      await push(ctx, 'g', [put(1, 'a', 'one'), put(2, 'b', { two: 2 }), put(3, 'c', 3)]);
      const dump = (entries: Array<[string, JSONValue]>) => [
        `{"viewsync":"space","format":2}\n${entries.map(([k, v]) => JSON.stringify({ key: k, value: v }) + '\n').join('')}{"viewsync":"end","entries":${entries.length}}\n`,
      ];
      await importSpace(
        ctx,
        '',
        dump([
          ['a', 'ONE!'],
          ['d', [1, 2]],
          ['é', 'x'],
        ]),
        { mode: 'replace' },
      );
      await expectExact(ctx);
      expect((await inspect(ctx, '')).entries).toBe(3);
      await importSpace(
        ctx,
        '',
        dump([
          ['a', 1],
          ['z', 'zz'],
        ]),
        { mode: 'merge' },
      );
      await expectExact(ctx);
      await push(ctx, 'g', [del(4, 'z')]);
      clock.now += 5_000;
      const collected = await collectGarbage(ctx);
      expect(collected.tombstones).toBeGreaterThan(0);
      expect(collected.changes).toBeGreaterThan(0);
      await expectExact(ctx);
      expect((await inspect(ctx, '')).history).toBe(0);
    });

    it('the change log is history, held to historyBytes (default: bytes): overwrites of a big value stop before the log passes it, deletes go on, housekeeping frees it', async () => {
      const clock = { now: 1_800_000_000_000 };
      const errors: unknown[] = [];
      const MiB = 2 ** 20;
      const ctx: SyncContext = createContext({
        storage: create(),
        mutators: testMutators,
        clock: () => clock.now,
        changes: {},
        quotas: { bytes: MiB },
        retention: { changesMs: 1_000, tombstonesMs: 1_000 },
        onError: (error) => errors.push(error),
      });
      const big = (n: number) => `${n}`.padEnd(200_000, '.');
      // The issue's case: 100 overwrites of one 200 KB key, each kept before and after in the log.
      for (let id = 1; id <= 100; id++) await push(ctx, 'g', [put(id, 'k', big(id))]);
      const { bytes, history } = await inspect(ctx, '');
      expect(bytes).toBeLessThan(MiB);
      expect(history).toBeLessThanOrEqual(MiB);
      // 200 KB, then 400 KB a write: the fourth would pass 1 MiB.
      expect(errors).toHaveLength(97);
      expect(errors[0]).toMatchObject({ name: 'QuotaExceededError', quota: 'historyBytes', limit: MiB });
      expect(String((errors[0] as Error).message)).toMatch(
        /^QuotaExceeded: space "" would keep 1,4\d\d,\d\d\d bytes of history \(its change log's values before and after, and tombstones, kept until retention lets them go\), over its quota of 1,048,576 \(quotas.historyBytes\); deletes are still allowed/,
      );
      // A new key adds to the history too: refused; a delete goes through.
      await push(ctx, 'g', [put(101, 'other', big(101).slice(0, 50_000)), del(102, 'k')]);
      expect(errors).toHaveLength(98);
      expect((await pull(ctx, 'g', null)).patch).toEqual([{ op: 'clear' }]);
      await expectExact(ctx);
      // Past retention, housekeeping frees the history: writes go on.
      clock.now += 2_000;
      await collectGarbage(ctx);
      expect((await inspect(ctx, '')).history).toBe(0);
      await push(ctx, 'g', [put(103, 'small', 1)]);
      expect(errors).toHaveLength(98);
      await expectExact(ctx);
    });

    it('tombstones are history with the log off: create-and-delete cycles stop at historyBytes; false lifts the bound', async () => {
      const cycle = async (ctx: SyncContext, from: number) => {
        for (let i = 0; i < 20; i++)
          await push(ctx, 'g', [put(from + 2 * i + 1, `key-${i}`.padEnd(100, '-'), 1), del(from + 2 * i + 2, `key-${i}`.padEnd(100, '-'))]);
      };
      const bounded = context({ historyBytes: 2_000 });
      await cycle(bounded.ctx, 0);
      expect((await inspect(bounded.ctx, '')).history).toBeLessThanOrEqual(2_000 + 364);
      expect(bounded.errors.length).toBeGreaterThan(10);
      expect(bounded.errors[0]!.error).toMatchObject({ quota: 'historyBytes' });
      await expectExact(bounded.ctx);
      const unbounded = context({ bytes: 1_000, historyBytes: false });
      await cycle(unbounded.ctx, 0);
      expect(unbounded.errors).toEqual([]);
      expect((await inspect(unbounded.ctx, '')).history).toBe(20 * 364);
    });

    it('events a mutation emits count as history', async () => {
      const errors: unknown[] = [];
      const mutators = { ...testMutators, shout: async (tx: WriteTransaction, { size }: { size: number }) => emit(tx, 'shout', 'x'.repeat(size)) };
      const ctx: SyncContext = createContext({
        storage: create(),
        mutators,
        changes: {},
        quotas: { historyBytes: 10_000 },
        onError: (error) => errors.push(error),
      });
      await push(ctx, 'g', [mutation('c', 1, 'shout', { size: 6_000 }), mutation('c', 2, 'shout', { size: 6_000 })]);
      expect(errors).toMatchObject([{ quota: 'historyBytes' }]);
      await expectExact(ctx);
    });

    it('a space written before the counters is counted once, the first time a quota needs it', async () => {
      const { ctx, errors } = context({ entries: 3 });
      await push(ctx, 'g', [put(1, 'a', 1), put(2, 'b', 2), put(3, 'c', 3)]);
      // As viewsync before counters left the meta record.
      await ctx.storage.transaction(
        async (tx) => {
          const { entries: _entries, bytes: _bytes, history: _history, ...old } = (await tx.get(new SpaceKeys('').meta)) as Meta;
          await tx.put(new SpaceKeys('').meta, old);
        },
        { readOnly: false },
      );
      await push(ctx, 'g', [put(4, 'd', 4), del(5, 'a'), put(6, 'd', 4)]);
      expect(errors.map(({ mutationID }) => mutationID)).toEqual([4]);
      await expectExact(ctx);
    });
  });
});
