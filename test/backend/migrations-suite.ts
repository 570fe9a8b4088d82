/**
 * Data migrations (`runMigration`) on any store: every entry done once, however the run is
 * stopped, shared or interleaved with pushes; their writes pulled, poked and in the change feed;
 * their records kept by housekeeping, shown by `inspect`.
 */
import { describe, expect, test } from 'vitest';
import { createContext, handlePush, type JSONValue, type Storage, type SyncContext } from '../../src/index.js';
import { readChanges, transact } from '../../src/backend.js';
import { collectGarbage, defineMigration, importSpace, inspect, type Migration, migrationStatus, runMigration } from '../../src/ops.js';
import type { StorageTransaction, TransactionOptions } from '../../src/store.js';
import { applyPatch, mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';
import { handlePull } from '../../src/index.js';

/** A value the test migration counts its runs on: `m` is how many times it ran on the entry. */
export type Counted = { n: number; m?: number };

/** Not idempotent on purpose: an entry done twice shows `m: 2`. */
export const countOnce: Migration = defineMigration({
  name: 'count-once',
  prefix: 'item/',
  entry: async (tx, key, value) => {
    const v = value as Counted;
    await tx.set(key, { ...v, m: (v.m ?? 0) + 1 });
  },
});

/** A context whose requests' space is their `?space=`. */
export function migrationContext(storage: Storage, extra: Parameters<typeof createContext>[0] extends infer T ? Partial<T> : never = {}): SyncContext {
  return createContext({
    storage,
    mutators: testMutators,
    space: (request) => new URL(request.url).searchParams.get('space') ?? '',
    onError: () => {},
    ...extra,
  });
}

/** `count` entries `item/0000…` of `space`, each `{n}`, and one entry outside the migration's prefix. */
export async function seed(ctx: SyncContext, space: string, count: number): Promise<void> {
  for (let from = 0; from < count; from += 200) {
    await transact(ctx, space, async (tx) => {
      for (let i = from; i < Math.min(count, from + 200); i++) await tx.set(itemKey(i), { n: i });
    });
  }
  await transact(ctx, space, (tx) => tx.set('other', { n: -1 }));
}

export function itemKey(i: number): string {
  return `item/${String(i).padStart(5, '0')}`;
}

/** Every entry of `space`, as the backend reads it. */
export async function entriesOf(ctx: SyncContext, space: string): Promise<Map<string, Counted>> {
  return transact(ctx, space, async (tx) => new Map((await tx.scan({ prefix: '' }).entries().toArray()) as Array<[string, Counted]>));
}

/** Throws after `fn` ran, in the write transaction the countdown reaches: a process killed before its commit. */
export class Killed extends Error {}

/** `store`, whose write transactions fail (rolled back) once `kill()` says so. */
export function killable(store: Storage, kill: () => boolean): Storage {
  return {
    ...(store.maxKeyBytes !== undefined && { maxKeyBytes: store.maxKeyBytes }),
    ...(store.parts !== undefined && { parts: store.parts }),
    transaction: <T>(fn: (tx: StorageTransaction) => Promise<T>, options: TransactionOptions) =>
      store.transaction(async (tx) => {
        const result = await fn(tx);
        if (!options.readOnly && kill()) throw new Killed('killed before commit');
        return result;
      }, options),
  };
}

export function describeMigrations(name: string, create: () => Storage | Promise<Storage>): void {
  describe(`data migrations: ${name}`, () => {
    test('runs an entry migration once on each entry of every space, in batches; a second run does nothing', async () => {
      const ctx = migrationContext(await create());
      for (const space of ['a', 'b', '']) await seed(ctx, space, 23);
      const progress: number[] = [];
      const result = await runMigration(ctx, countOnce, { batch: 5, onProgress: ({ entries }) => void progress.push(entries) });
      expect(result).toEqual({ migrated: 3, skipped: 0, empty: 0, entries: 69 });
      expect(progress.at(-1)).toBe(69);
      for (const space of ['a', 'b', '']) {
        const entries = await entriesOf(ctx, space);
        for (let i = 0; i < 23; i++) expect(entries.get(itemKey(i))).toEqual({ n: i, m: 1 });
        // Outside its prefix: untouched.
        expect(entries.get('other')).toEqual({ n: -1 });
      }
      expect(await runMigration(ctx, countOnce, { batch: 5 })).toEqual({ migrated: 0, skipped: 3, empty: 0, entries: 0 });
      expect((await entriesOf(ctx, 'a')).get(itemKey(0))).toEqual({ n: 0, m: 1 });
      const status = await migrationStatus(ctx, 'count-once');
      expect(status.map(({ space, state, entries }) => [space, state, entries])).toEqual([
        ['', 'done', 23],
        ['a', 'done', 23],
        ['b', 'done', 23],
      ]);
      expect((await inspect(ctx, 'a')).migrations?.['count-once']).toMatchObject({ state: 'done', entries: 23 });
    });

    test('killed before any commit, again and again, then resumed: every entry done exactly once', async () => {
      let countdown = Infinity;
      const base = await create();
      const ctx = migrationContext(killable(base, () => --countdown === 0));
      for (const space of ['a', 'b']) await seed(ctx, space, 37);
      let kills = 0;
      let seedRandom = 7;
      for (let runs = 0; ; runs++) {
        expect(runs).toBeLessThan(200);
        // Kill in the 1st to 4th write transaction from now.
        seedRandom = (seedRandom * 48271) % 2147483647;
        countdown = 1 + (seedRandom % 4);
        try {
          await runMigration(ctx, countOnce, { batch: 4 });
          break;
        } catch (error) {
          if (!(error instanceof Killed)) throw error;
          kills++;
        }
      }
      countdown = Infinity;
      expect(kills).toBeGreaterThan(3);
      for (const space of ['a', 'b']) {
        const entries = await entriesOf(ctx, space);
        for (let i = 0; i < 37; i++) expect(entries.get(itemKey(i)), `${space} ${i}`).toEqual({ n: i, m: 1 });
      }
      const status = await migrationStatus(ctx, 'count-once');
      expect(status.every(({ state, entries }) => state === 'done' && entries === 37)).toBe(true);
    });

    test('stopped by its signal between batches, a run goes on where the last one stopped: "started" meanwhile', async () => {
      const ctx = migrationContext(await create());
      await seed(ctx, 's', 30);
      const stop = new AbortController();
      await expect(
        runMigration(ctx, countOnce, { batch: 7, signal: stop.signal, onProgress: ({ entries }) => void (entries >= 14 && stop.abort(new Error('stopped'))) }),
      ).rejects.toThrow('stopped');
      const [status] = await migrationStatus(ctx, 'count-once');
      expect(status).toMatchObject({ space: 's', state: 'started', entries: 14, after: itemKey(13) });
      expect(await runMigration(ctx, countOnce, { batch: 7 })).toMatchObject({ migrated: 1, entries: 16 });
      const entries = await entriesOf(ctx, 's');
      for (let i = 0; i < 30; i++) expect(entries.get(itemKey(i))).toEqual({ n: i, m: 1 });
    });

    test('two runners of one migration at once share the work: each entry done once', async () => {
      const ctx = migrationContext(await create());
      for (const space of ['a', 'b', 'c']) await seed(ctx, space, 25);
      const [one, two] = await Promise.all([runMigration(ctx, countOnce, { batch: 3 }), runMigration(ctx, countOnce, { batch: 3 })]);
      expect(one.entries + two.entries).toBe(75);
      for (const space of ['a', 'b', 'c']) {
        const entries = await entriesOf(ctx, space);
        for (let i = 0; i < 25; i++) expect(entries.get(itemKey(i)), `${space} ${i}`).toEqual({ n: i, m: 1 });
      }
    });

    test('pushes go on between batches: a push ahead of the migration is migrated, one behind it is not, and pulls see both', async () => {
      const ctx = migrationContext(await create());
      await seed(ctx, 's', 20);
      const pushed: Array<{ key: string; behind: boolean }> = [];
      let id = 0;
      const first = await pullOf(ctx, 's', null);
      const held = applyPatch(new Map(), first.patch);
      const result = await runMigration(ctx, countOnce, {
        batch: 4,
        onProgress: async ({ entries }) => {
          if (entries === 0 || entries >= 20) return;
          // Between two batches: one key just done (behind), one not reached yet (ahead), through handlePush.
          const [behind, ahead] = [itemKey(entries - 1), itemKey(entries + 2)];
          pushed.push({ key: behind, behind: true }, { key: ahead, behind: false });
          const response = await handlePush(
            post(
              '/push?space=s',
              pushBody('g', [
                mutation('c', ++id, 'put', { key: behind, value: { n: 1000 + id } }),
                mutation('c', ++id, 'put', { key: ahead, value: { n: 1000 + id } }),
              ]),
            ),
            ctx,
          );
          expect(response.status).toBe(200);
        },
      });
      expect(result.entries).toBe(20);
      const entries = await entriesOf(ctx, 's');
      const last = new Map(pushed.map(({ key, behind }) => [key, behind]));
      for (const [key, behind] of last) expect(entries.get(key)!.m, key).toBe(behind ? undefined : 1);
      // A client pulls what the migration and the pushes wrote, in one patch from its cookie.
      const view = applyPatch(new Map(), (await pullOf(ctx, 's', null)).patch);
      const since = applyPatch(held, (await pullOf(ctx, 's', first.cookie)).patch);
      expect(Object.fromEntries(since)).toEqual(Object.fromEntries(view));
      expect(Object.fromEntries(view)).toEqual(Object.fromEntries(entries));
    });

    test('its writes are in the change feed as made by the migration, and poke the space', async () => {
      const notified: string[] = [];
      const ctx = migrationContext(await create(), {
        changes: {},
        pokes: { notifier: { notify: (space: string) => void notified.push(space), subscribe: () => () => {} } },
      });
      await seed(ctx, 's', 3);
      const { cursor } = await readChanges(ctx, 's', { after: '0' });
      notified.length = 0;
      await runMigration(ctx, countOnce);
      const { changes } = await readChanges(ctx, 's', { after: cursor });
      expect(changes.map((change) => [change.op, 'key' in change ? change.key : '', change.by])).toEqual(
        [0, 1, 2].map((i) => ['set', itemKey(i), { kind: 'migration', name: 'count-once' }]),
      );
      expect(notified).toContain('s');
    });

    test('a space migration runs once per space, in one transaction; a failing migration writes nothing and rejects', async () => {
      const ctx = migrationContext(await create());
      for (const space of ['a', 'b']) await seed(ctx, space, 3);
      const whole = defineMigration({
        name: 'whole.v2',
        space: async (tx, space) =>
          void (await tx.set('meta/space', { space, runs: (((await tx.get('meta/space')) as { runs?: number } | undefined)?.runs ?? 0) + 1 })),
      });
      expect(await runMigration(ctx, whole)).toMatchObject({ migrated: 2 });
      expect(await runMigration(ctx, whole)).toMatchObject({ migrated: 0, skipped: 2 });
      expect((await entriesOf(ctx, 'b')).get('meta/space')).toEqual({ space: 'b', runs: 1 });
      const failing = defineMigration({
        name: 'fails',
        prefix: 'item/',
        entry: async (tx, key) => {
          await tx.set(`copy/${key}`, 1);
          if (key === itemKey(2)) throw new Error('bad entry');
        },
      });
      const before = await entriesOf(ctx, 'a');
      await expect(runMigration(ctx, failing, { spaces: ['a'] })).rejects.toThrow('bad entry');
      expect(await entriesOf(ctx, 'a')).toEqual(before);
      expect((await migrationStatus(ctx, 'fails')).find(({ space }) => space === 'a')).toMatchObject({ state: 'pending' });
    });

    test('a split writes keys ahead of itself: each is given to it once, in key order, within a batch or in a later one', async () => {
      const ctx = migrationContext(await create());
      await transact(ctx, 's', async (tx) => {
        for (const key of ['a', 'c', 'e', 'g']) await tx.set(key, { seen: 0 });
      });
      const given: string[] = [];
      const split = defineMigration({
        name: 'split',
        entry: async (tx, key, value) => {
          given.push(key);
          const v = value as { seen: number; from?: string };
          if (v.from === undefined && key.length === 1) await tx.set(`${key}x`, { seen: 0, from: key });
          await tx.set(key, { ...v, seen: v.seen + 1 });
        },
      });
      await runMigration(ctx, split, { batch: 2 });
      expect(given).toEqual(['a', 'ax', 'c', 'cx', 'e', 'ex', 'g', 'gx']);
      expect([...(await entriesOf(ctx, 's')).values()].every((value) => (value as unknown as { seen: number }).seen === 1)).toBe(true);
    });

    test('an entry an earlier one of its batch changed is given as it is now, and one it deleted is not given', async () => {
      const ctx = migrationContext(await create());
      await transact(ctx, 's', async (tx) => {
        for (const id of ['1', '2', '3']) for (const half of ['a', 'b']) await tx.set(`pair/${id}${half}`, { half });
      });
      const given: string[] = [];
      // Joins each pair into its first key; a second half whose first half is gone is left alone.
      const join = defineMigration({
        name: 'join',
        prefix: 'pair/',
        entry: async (tx, key, value) => {
          given.push(key);
          if (key.endsWith('a')) {
            const other = `${key.slice(0, -1)}b`;
            await tx.set(key, { halves: [(value as { half: string }).half, ((await tx.get(other)) as { half: string }).half] });
            await tx.del(other);
          }
        },
      });
      await runMigration(ctx, join, { batch: 4 });
      expect(given).toEqual(['pair/1a', 'pair/2a', 'pair/3a']);
      expect([...(await entriesOf(ctx, 's')).keys()]).toEqual(['pair/1a', 'pair/2a', 'pair/3a']);
    });

    test('housekeeping keeps the records, an import over a migrated space keeps its record, a space made during the run is done at its end', async () => {
      const ctx = migrationContext(await create(), { retention: { clientGroupsMs: 1, tombstonesMs: 1, changesMs: 1 } });
      await seed(ctx, 'a', 5);
      let made = false;
      await runMigration(ctx, countOnce, {
        batch: 2,
        onProgress: async () => {
          if (made) return;
          made = true;
          await seed(ctx, 'late', 4);
        },
      });
      expect([...(await entriesOf(ctx, 'late')).values()].filter(({ m }) => m === 1)).toHaveLength(4);
      await new Promise((resolve) => setTimeout(resolve, 5));
      await collectGarbage(ctx);
      expect(await runMigration(ctx, countOnce)).toMatchObject({ skipped: 2, entries: 0 });
      // An import brings data, not records: the space stays done under the name.
      const dump = [
        { viewsync: 'space', format: 2 },
        { key: itemKey(0), value: { n: 0 } },
        { viewsync: 'end', entries: 1 },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n');
      await importSpace(ctx, 'a', dump, { mode: 'replace', clients: false });
      expect((await inspect(ctx, 'a')).migrations?.['count-once']).toMatchObject({ state: 'done', entries: 5 });
      expect(await runMigration(ctx, countOnce, { spaces: ['a'] })).toMatchObject({ skipped: 1 });
    });

    test('refuses a bad name, a migration with both or neither function, and a bad batch', async () => {
      const ctx = migrationContext(await create());
      expect(() => defineMigration({ name: 'a/b', entry: () => {} })).toThrow(/letters, digits/);
      expect(() => defineMigration({ name: 'x', entry: () => {}, space: () => {} } as never)).toThrow(/either an entry function/);
      await expect(runMigration(ctx, countOnce, { batch: 0 })).rejects.toThrow(/options.batch/);
    });
  });
}

async function pullOf(ctx: SyncContext, space: string, cookie: JSONValue): Promise<{ cookie: JSONValue; patch: Parameters<typeof applyPatch>[1] }> {
  const response = await handlePull(post(`/pull?space=${space}`, pullBody('reader', cookie)), ctx);
  expect(response.status).toBe(200);
  return response.json();
}
