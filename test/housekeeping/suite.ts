/**
 * Housekeeping, rule by rule, on any store: a context over `create()` with a clock the test
 * moves, a retention of seconds, and `collectGarbage` run by hand.
 */
import { describe, expect, it } from 'vitest';
import { handlePull, handlePush, type JSONValue, type Storage, type SyncContext, type SyncOptions, createContext } from '../../src/index.js';
import { read, transact } from '../../src/backend.js';
import { collectGarbage, importSpace, inspect, StagingLostError } from '../../src/ops.js';
import { applyPatch, mutation, pull, pullBodyV0, post, push, pushBody, testMutators } from '../support/helpers.js';
import { membershipView, ViewClient, write } from '../views/app.js';
import { stage, stagingID } from '../../src/sync/dumps/import-batch.js';

const SECOND = 1_000;

/** A dump (format 2) of `keys`, each holding its own name. */
function dumpOf(keys: readonly string[]): string {
  return (
    [
      '{"viewsync":"space","format":2}',
      ...keys.map((key) => JSON.stringify({ key, value: key })),
      JSON.stringify({ viewsync: 'end', entries: keys.length }),
    ].join('\n') + '\n'
  );
}

export function describeHousekeeping(name: string, create: () => Storage | Promise<Storage>): void {
  describe(`housekeeping: ${name}`, () => {
    /** A context at time `clock.now`, keeping groups and tombstones 10 s. */
    async function context(retention: SyncOptions['retention'] = { clientGroupsMs: 10 * SECOND, tombstonesMs: 10 * SECOND }, more: Partial<SyncOptions> = {}) {
      const clock = { now: 1_800_000_000_000 };
      const ctx: SyncContext = createContext({
        storage: await create(),
        mutators: testMutators,
        retention,
        clock: () => clock.now,
        onError: () => {},
        ...more,
      });
      return { ctx, clock };
    }
    const put = (client: string, id: number, key: string, value: JSONValue) => mutation(client, id, 'put', { key, value });
    const del = (client: string, id: number, key: string) => mutation(client, id, 'del', { key });
    async function answer(ctx: SyncContext, body: unknown, path: '/pull' | '/push') {
      const response = await (path === '/pull' ? handlePull : handlePush)(post(path, body), ctx);
      expect(response.status).toBe(200);
      return response.json();
    }

    it('tombstones past their retention go; an older cookie then gets a reset above it, a newer one its patch', async () => {
      const { ctx, clock } = await context();
      await push(ctx, 'writer', [put('w', 1, 'a', 1), put('w', 2, 'b', 2), put('w', 3, 'c', 3)]);
      const old = await pull(ctx, 'reader', null);
      await push(ctx, 'writer', [del('w', 4, 'a')]);
      clock.now += 5 * SECOND;
      await push(ctx, 'writer', [del('w', 5, 'b')]);
      const middle = await pull(ctx, 'reader', old.cookie);
      clock.now += 6 * SECOND;
      // `a` was deleted 11 s ago, `b` 6 s ago: only `a`'s tombstone goes.
      expect(await collectGarbage(ctx)).toEqual({ clientGroups: 0, clients: 0, tombstones: 1, views: 0, changes: 0 });
      expect(await collectGarbage(ctx)).toEqual({ clientGroups: 0, clients: 0, tombstones: 0, views: 0, changes: 0 });

      const reset = await pull(ctx, 'reader', old.cookie);
      expect(reset.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'c', value: 3 }]);
      expect((reset.cookie as { order: number }).order).toBeGreaterThan((old.cookie as { order: number }).order);
      // Newer than the removed tombstone: the ordinary patch, and it still hears of `b`.
      expect(middle.patch).toEqual([
        { op: 'del', key: 'a' },
        { op: 'del', key: 'b' },
      ]);
      await push(ctx, 'writer', [put('w', 6, 'd', 4)]);
      const next = await pull(ctx, 'reader', middle.cookie);
      expect(next.patch).toEqual([{ op: 'put', key: 'd', value: 4 }]);
      expect(applyPatch(new Map([['c', 3]]), next.patch)).toEqual(
        new Map([
          ['c', 3],
          ['d', 4],
        ]),
      );
    });

    it('the staging area a crashed import left is removed a day after the import began; a running one stays', async () => {
      const { ctx, clock } = await context();
      await push(ctx, 'writer', [put('w', 1, 'kept', 1)]);
      const [crashed, running] = [stagingID(clock.now - 25 * 60 * 60 * SECOND), stagingID(clock.now - 60 * SECOND)];
      await ctx.storage.transaction(
        async (tx) => {
          await stage(
            tx,
            '',
            crashed,
            Array.from({ length: 150 }, (_, i) => [`k${i}`, i] as const),
          );
          await stage(tx, '', running, [['k', 1]]);
        },
        { readOnly: false, space: '' },
      );
      await collectGarbage(ctx);
      const rows = await ctx.storage.transaction((tx) => tx.scan({ prefix: 'i/' }), { readOnly: true });
      expect(rows.map(([row]) => row)).toEqual([`i//${running}/k`]);
      expect((await pull(ctx, 'reader', null)).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'kept', value: 1 }]);
    });

    it('an import still running when housekeeping takes its staging area for abandoned (a day after it began) fails saying so, and deletes nothing', async () => {
      const { ctx, clock } = await context();
      const space = 'big';
      const keys = Array.from({ length: 1_500 }, (_, i) => `k${String(i).padStart(4, '0')}`);
      await transact(ctx, space, async (tx) => {
        for (const key of keys) await tx.set(key, key);
      });
      // A dump made by hand (exportSpace's stream cannot cross Durable Objects in workerd).
      const lines = dumpOf(keys)
        .split('\n')
        .map((line) => line + '\n');
      // The dump's first thousand entries are staged (one staging transaction), then the reader
      // waits while a day passes and housekeeping runs, then the rest comes.
      let resume!: () => void;
      const paused = new Promise<void>((resolve) => (resume = resolve));
      let reachedPause!: () => void;
      const atPause = new Promise<void>((resolve) => (reachedPause = resolve));
      async function* source() {
        for (const [i, line] of lines.entries()) {
          if (i === 1_200) {
            reachedPause();
            await paused;
          }
          yield line;
        }
      }
      const importing = importSpace(ctx, space, source(), { mode: 'replace' }).then(
        () => undefined,
        (error: unknown) => error,
      );
      await atPause;
      clock.now += 25 * 60 * 60 * SECOND;
      await collectGarbage(ctx);
      resume();
      const failure = await importing;
      expect(failure).toBeInstanceOf(StagingLostError);
      expect((failure as Error).message).toMatch(/staging area.*removed.*abandoned.*nothing of it was applied/s);
      expect(await read(ctx, space, (tx) => tx.scan().keys().toArray())).toEqual(keys);
      expect(await ctx.storage.transaction((tx) => tx.scan({ prefix: 'i/' }), { readOnly: true })).toEqual([]);
    });

    it('so does a small import whose staging area housekeeping removes between its staging and its apply (what the fault-injection suite caught, with two servers’ clocks apart)', async () => {
      const { ctx, clock } = await context();
      const keys = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, '0')}`);
      await transact(ctx, '', async (tx) => {
        for (const key of keys) await tx.set(key, key);
      });
      const dump = dumpOf(keys);
      // The next transaction after the dump is staged (the apply's) first waits for housekeeping
      // a day on, as another server's would run.
      let armed = false;
      const storage: Storage = {
        ...ctx.storage,
        transaction: async (fn, options) => {
          if (armed) {
            armed = false;
            clock.now += 25 * 60 * 60 * SECOND;
            await collectGarbage(ctx);
          }
          return ctx.storage.transaction(fn, options);
        },
      };
      const onProgress = ({ phase }: { phase: string }) => void (armed ||= phase === 'reading');
      const failure = await importSpace(createContext({ ...ctx.options, storage }), '', [dump], { mode: 'replace', onProgress }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(StagingLostError);
      expect(await read(ctx, '', (tx) => tx.scan().keys().toArray())).toEqual(keys);
      expect(await ctx.storage.transaction((tx) => tx.scan({ prefix: 'i/' }), { readOnly: true })).toEqual([]);
      // Run again, it is applied.
      expect(await importSpace(ctx, '', [dump], { mode: 'replace' })).toMatchObject({ entries: 20, written: 0, deleted: 0 });
    });

    it('the staging area of a new space’s first import, killed while staging, is shown by inspect and removed by collectGarbage over every space a day after the import began', async () => {
      const { ctx, clock } = await context();
      // No meta record in either space: nothing but the staging areas, one of them large.
      const [first, second] = [stagingID(clock.now - 60 * SECOND), stagingID(clock.now - 30 * SECOND)];
      const staged = Array.from({ length: 150 }, (_, i) => [`k${i}`, { i }] as const);
      await ctx.storage.transaction((tx) => stage(tx, 'new/space', first, staged), { readOnly: false, space: 'new/space' });
      await ctx.storage.transaction((tx) => stage(tx, 'new', second, [['k', 'ü']]), { readOnly: false, space: 'new' });
      await push(ctx, 'writer', [put('w', 1, 'kept', 1)]);
      const bytes = staged.reduce((sum, [key, value]) => sum + key.length + JSON.stringify(value).length, 0);
      const empty = { entries: 0, bytes: 0, history: 0, version: 0, clientGroups: 0, lastActivity: null };
      expect((await inspect(ctx)).spaces.filter(({ staging }) => staging.length > 0)).toEqual([
        { space: 'new', ...empty, staging: [{ started: clock.now - 30 * SECOND, rows: 1, bytes: 1 + 4 }] },
        { space: 'new/space', ...empty, staging: [{ started: clock.now - 60 * SECOND, rows: 150, bytes }] },
      ]);
      expect((await inspect(ctx, 'new/space')).staging).toEqual([{ started: clock.now - 60 * SECOND, rows: 150, bytes }]);

      // Within the day the import may still be running: it stays.
      clock.now += 23 * 60 * 60 * SECOND;
      await collectGarbage(ctx);
      expect(await ctx.storage.transaction((tx) => tx.scan({ prefix: 'i/' }), { readOnly: true })).toHaveLength(151);
      clock.now += 60 * 60 * SECOND;
      await collectGarbage(ctx);
      expect(await ctx.storage.transaction((tx) => tx.scan({ prefix: 'i/' }), { readOnly: true })).toEqual([]);
      expect((await inspect(ctx)).spaces.map(({ space }) => space)).toEqual(['']);
      expect((await pull(ctx, 'reader', null)).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'kept', value: 1 }]);
    });

    it('an entry deleted and written again is live: its old tombstone is not collected', async () => {
      const { ctx, clock } = await context();
      await push(ctx, 'writer', [put('w', 1, 'k', 1), del('w', 2, 'k'), put('w', 3, 'k', 2)]);
      clock.now += 20 * SECOND;
      expect((await collectGarbage(ctx)).tombstones).toBe(0);
      expect((await pull(ctx, 'reader', null)).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'k', value: 2 }]);
    });

    it('an idle group expires with its clients; its next pull and push get ClientStateNotFound, others carry on', async () => {
      const { ctx, clock } = await context();
      await push(ctx, 'idle', [put('i1', 1, 'x', 1)]);
      await push(ctx, 'idle', [put('i2', 1, 'y', 1)]);
      const { cookie } = await pull(ctx, 'idle', null);
      clock.now += 8 * SECOND;
      await push(ctx, 'busy', [put('b', 1, 'z', 1)]);
      clock.now += 3 * SECOND;
      expect(await collectGarbage(ctx)).toEqual({ clientGroups: 1, clients: 2, tombstones: 0, views: 0, changes: 0 });

      expect(await answer(ctx, { pullVersion: 1, clientGroupID: 'idle', cookie, profileID: 'p', schemaVersion: '' }, '/pull')).toEqual({
        error: 'ClientStateNotFound',
      });
      expect(await answer(ctx, pushBody('idle', [put('i1', 2, 'x', 2)]), '/push')).toEqual({ error: 'ClientStateNotFound' });
      // Even a client it never had: the group is gone.
      expect(await answer(ctx, pushBody('idle', [put('i3', 1, 'x', 3)]), '/push')).toEqual({ error: 'ClientStateNotFound' });
      // Nothing of those pushes was applied; the busy group is untouched.
      const view = await pull(ctx, 'busy', null);
      expect(applyPatch(new Map(), view.patch)).toEqual(
        new Map([
          ['x', 1],
          ['y', 1],
          ['z', 1],
        ]),
      );
      expect(view.lastMutationIDChanges).toEqual({ b: 1 });
    });

    it('a new group that forks another group’s cookie gets an ordinary patch, also after that group expired', async () => {
      const { ctx, clock } = await context();
      await push(ctx, 'first', [put('f', 1, 'a', 1)]);
      const { cookie } = await pull(ctx, 'first', null);
      await push(ctx, 'other', [put('o', 1, 'b', 2)]);
      clock.now += 11 * SECOND;
      expect((await collectGarbage(ctx)).clientGroups).toBe(2);
      const forked = await pull(ctx, 'forked', cookie);
      expect(forked.patch).toEqual([{ op: 'put', key: 'b', value: 2 }]);
      expect(forked.lastMutationIDChanges).toEqual({});
    });

    it('a group that only pulls stays alive; idle means no push and no pull', async () => {
      const { ctx, clock } = await context();
      await push(ctx, 'reader', [put('r', 1, 'a', 1)]);
      let { cookie } = await pull(ctx, 'reader', null);
      for (let i = 0; i < 4; i++) {
        clock.now += 6 * SECOND;
        ({ cookie } = await pull(ctx, 'reader', cookie));
        expect((await collectGarbage(ctx)).clientGroups).toBe(0);
      }
      clock.now += 11 * SECOND;
      expect(await collectGarbage(ctx)).toEqual({ clientGroups: 1, clients: 1, tombstones: 0, views: 0, changes: 0 });
    });

    it('an expired group’s marker is kept for ever: a tab back after months re-sending its first mutation is told, never applied twice', async () => {
      const { ctx, clock } = await context({ clientGroupsMs: 10 * SECOND, tombstonesMs: 30 * SECOND });
      const pay = mutation('tab', 1, 'increment', { key: 'balance', delta: 100 });
      // Pushed and committed (200), but the tab closed before a pull could confirm it.
      await push(ctx, 'closed', [pay]);
      clock.now += 11 * SECOND;
      expect((await collectGarbage(ctx)).clientGroups).toBe(1);
      // Far past every retention, with collections in between.
      for (let i = 0; i < 10; i++) {
        clock.now += 100 * 24 * 3600 * SECOND;
        await collectGarbage(ctx);
      }
      // The reopened tab (or the real client's mutation recovery) sends the pending mutation again.
      expect(await answer(ctx, pushBody('closed', [pay]), '/push')).toEqual({ error: 'ClientStateNotFound' });
      expect(await answer(ctx, { pullVersion: 1, clientGroupID: 'closed', cookie: null, profileID: 'p', schemaVersion: '' }, '/pull')).toEqual({
        error: 'ClientStateNotFound',
      });
      expect(applyPatch(new Map(), (await pull(ctx, 'observer', null)).patch)).toEqual(new Map([['balance', 100]]));
      // What a marker costs: one small record per expired group, nothing else of it.
      const rows = await ctx.storage.transaction((tx) => tx.scan({ prefix: '' }), { readOnly: true });
      const ofGroup = rows.filter(([key]) => key.includes('closed') || key.includes('tab'));
      expect(ofGroup.map(([key, value]) => [key, value])).toEqual([['g//-/closed', { expired: expect.any(Number) }]]);
    });

    it('a version 0 client its group forgot gets the deprecated ClientStateNotFound (200), not a 500', async () => {
      const { ctx, clock } = await context();
      await push(ctx, 'v0client', [put('v0client', 1, 'a', 1)]);
      clock.now += 11 * SECOND;
      expect((await collectGarbage(ctx)).clients).toBe(1);
      expect(await answer(ctx, pullBodyV0('v0client', null, 1), '/pull')).toEqual({ error: 'ClientStateNotFound' });
    });

    it('retention false keeps everything; the defaults keep 30 days', async () => {
      const kept = await context({ clientGroupsMs: false, tombstonesMs: false });
      await push(kept.ctx, 'g', [put('c', 1, 'a', 1), del('c', 2, 'a')]);
      kept.clock.now += 365 * 24 * 3600 * SECOND;
      expect(await collectGarbage(kept.ctx)).toEqual({ clientGroups: 0, clients: 0, tombstones: 0, views: 0, changes: 0 });
      const defaults = await context({});
      await push(defaults.ctx, 'g', [put('c', 1, 'a', 1), del('c', 2, 'a')]);
      defaults.clock.now += 29 * 24 * 3600 * SECOND;
      expect(await collectGarbage(defaults.ctx)).toEqual({ clientGroups: 0, clients: 0, tombstones: 0, views: 0, changes: 0 });
      defaults.clock.now += 2 * 24 * 3600 * SECOND;
      expect(await collectGarbage(defaults.ctx)).toEqual({ clientGroups: 1, clients: 1, tombstones: 1, views: 0, changes: 0 });
    });

    it('collects in small transactions: 300 tombstones and 40 groups in batches of 16', async () => {
      const { ctx: plain, clock } = await context();
      const storage = plain.storage;
      let transactions = 0;
      const ctx = createContext({
        ...plain.options,
        storage: { transaction: (fn, options) => (options.readOnly || transactions++, storage.transaction(fn, options)) },
      });
      await push(
        ctx,
        'writer',
        Array.from({ length: 300 }, (_, i) => put('w', i + 1, `k${i}`, i)),
      );
      await push(
        ctx,
        'writer',
        Array.from({ length: 300 }, (_, i) => del('w', 301 + i, `k${i}`)),
      );
      for (let g = 0; g < 39; g++) await push(ctx, `group${g}`, [put(`client${g}`, 1, `g${g}`, g)]);
      clock.now += 11 * SECOND;
      transactions = 0;
      expect(await collectGarbage(ctx, undefined, { batch: 16 })).toEqual({ clientGroups: 40, clients: 40, tombstones: 300, views: 0, changes: 0 });
      expect(transactions).toBeGreaterThanOrEqual(300 / 16);
      clock.now += 11 * SECOND;
      expect(await collectGarbage(ctx, '', { batch: 16 })).toEqual({ clientGroups: 0, clients: 0, tombstones: 0, views: 0, changes: 0 });
      // Only the live entries are left to send.
      expect((await pull(ctx, 'reader', null)).patch).toHaveLength(40);
    });

    it('spaces are collected each on its own, and collectGarbage finds them all', async () => {
      const { ctx: plain, clock } = await context();
      const ctx = createContext({ ...plain.options, space: (request) => new URL(request.url).searchParams.get('space') ?? '' });
      for (const space of ['a', 'b/c', '%']) {
        const body = pushBody('g', [put('c', 1, 'k', 1), del('c', 2, 'k')]);
        expect((await handlePush(post(`/push?space=${encodeURIComponent(space)}`, body), ctx)).status).toBe(200);
      }
      clock.now += 11 * SECOND;
      expect(await collectGarbage(ctx, 'b/c')).toEqual({ clientGroups: 1, clients: 1, tombstones: 1, views: 0, changes: 0 });
      expect(await collectGarbage(ctx)).toEqual({ clientGroups: 2, clients: 2, tombstones: 2, views: 0, changes: 0 });
    });

    it('a little runs after pushes, in the background, at most once a minute per space', async () => {
      const { ctx, clock } = await context();
      const tombstones = () => ctx.storage.transaction(async (tx) => (await tx.scan({ prefix: 't/' })).length, { readOnly: true });
      await push(ctx, 'w', [put('c', 1, 'a', 1), del('c', 2, 'a')]);
      clock.now += 30 * SECOND;
      await push(ctx, 'w', [put('c', 3, 'b', 1)]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await tombstones()).toBe(1);
      clock.now += 40 * SECOND;
      await push(ctx, 'w', [put('c', 4, 'b', 2)]);
      await expect.poll(tombstones, { timeout: 5_000 }).toBe(0);
    });

    it('view records no pull issued for the group retention go; a cookie naming one gets a reset once its view changed', async () => {
      const { ctx, clock } = await context(undefined, {
        authenticate: (request: Request) => request.headers.get('authorization') || null,
        view: membershipView,
      });
      await write(ctx, 'admin', { 'member/alice/1': '1', 'member/bob/1': '1', 'doc/1/x': 1, 'doc/2/x': 2 });
      const alice = new ViewClient(ctx, 'alice');
      const bob = new ViewClient(ctx, 'bob');
      await alice.pull();
      await bob.pull();
      // Bob pulls now and then, which keeps his record; alice does not.
      for (let i = 0; i < 3; i++) {
        clock.now += 4 * SECOND;
        await bob.pull();
      }
      expect(await collectGarbage(ctx)).toMatchObject({ views: 1 });
      expect(await collectGarbage(ctx)).toMatchObject({ views: 0 });
      await write(ctx, 'admin', { 'member/alice/2': '2', 'member/bob/2': '2' });
      expect((await alice.pull()).patch[0]).toEqual({ op: 'clear' });
      expect((await bob.pull()).patch).toEqual(expect.arrayContaining([{ op: 'put', key: 'doc/2/x', value: 2 }]));
      expect([alice.data.get('doc/2/x'), bob.data.get('doc/2/x'), bob.data.size]).toEqual([2, 2, 4]);
    });
  });
}
