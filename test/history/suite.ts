/**
 * A space's history on any store: `at`, `readHistory`, `restoreSpace`, `revertChanges` and
 * `eraseData` against states the test recorded as it wrote them, checkpoints included, and the
 * history's bytes in `inspect` against a recount of its rows. Run by stores.test.ts in Node and
 * by durable-object.workerd.test.ts in workerd.
 */
import { FEED_RECORD } from '../../src/sync/feed/feed-record.js';
import { describe, expect, test } from 'vitest';
import { createContext, type JSONValue, type Storage, type SyncContext } from '../../src/index.js';
import { at, eraseData, readChanges, readHistory, restoreSpace, revertChanges, transact } from '../../src/backend.js';
import { collectGarbage, exportSpace, inspect } from '../../src/ops.js';
import { countHistory } from '../../src/sync/history/history-bytes.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import type { Meta } from '../../src/sync/version/records.js';
import { testMutators } from '../support/helpers.js';

/** Runs a test's body with a store: by default a new one from `create`; in workerd, inside its object. */
export type Within = (body: (storage: Storage) => Promise<void>) => Promise<void>;

type State = Record<string, JSONValue>;

/** A context keeping history, a checkpoint due every 2 versions (and the space's entries), and a clock the test moves. */
export function historyContext(storage: Storage): { ctx: SyncContext; clock: { now: number } } {
  const clock = { now: 1_800_000_000_000 };
  return { ctx: createContext({ storage, mutators: testMutators, history: { checkpointEvery: 2 }, clock: () => clock.now, onError: () => {} }), clock };
}

/** The space's meta record. */
export function metaOf(ctx: SyncContext, space: string): Promise<Meta | undefined> {
  return ctx.storage.transaction(async (tx) => (await tx.get(new SpaceKeys(space).meta)) as Meta | undefined, { readOnly: true, space });
}

/**
 * Writes to a space and records what it holds at each version, as a model the history must agree
 * with: `states.get(v)` is the space at version v.
 */
export class Recorder {
  readonly states = new Map<number, State>([[0, {}]]);
  #model: State = {};
  constructor(
    readonly ctx: SyncContext,
    readonly space: string,
  ) {}

  /** One commit: sets (a value) and deletes (undefined), made for `userID`. */
  async write(changes: Record<string, JSONValue | undefined>, userID?: string): Promise<number> {
    await transact(
      this.ctx,
      this.space,
      async (tx) => {
        for (const [key, value] of Object.entries(changes)) await (value === undefined ? tx.del(key) : tx.set(key, value));
      },
      { userID },
    );
    return this.settle();
  }

  /** Records the space's state at its version now, after a write the recorder did not make (a restore, a revert). */
  async settle(): Promise<number> {
    const version = (await metaOf(this.ctx, this.space))?.version ?? 0;
    this.#model = Object.fromEntries((await at(this.ctx, this.space, version)).entries);
    this.states.set(version, this.#model);
    return version;
  }

  /** A write the recorder models itself: the state it records is what the model says, not a read. */
  async modelled(changes: Record<string, JSONValue | undefined>, userID?: string): Promise<number> {
    await transact(
      this.ctx,
      this.space,
      async (tx) => {
        for (const [key, value] of Object.entries(changes)) await (value === undefined ? tx.del(key) : tx.set(key, value));
      },
      { userID },
    );
    const next: State = { ...this.#model };
    for (const [key, value] of Object.entries(changes)) {
      if (value === undefined) delete next[key];
      else next[key] = value;
    }
    this.#model = next;
    const version = (await metaOf(this.ctx, this.space))!.version;
    this.states.set(version, next);
    return version;
  }

  /** The state recorded at `version`, or at the latest version before it (a version that changed nothing here). */
  at(version: number): State {
    let best = 0;
    for (const recorded of this.states.keys()) if (recorded <= version && recorded > best) best = recorded;
    return this.states.get(best)!;
  }
}

/** The space as `at` reads it at `version`, read in pages of `limit` to check that pages join up. */
export async function stateAt(ctx: SyncContext, space: string, version: number, limit?: number): Promise<State> {
  const entries: Array<[string, JSONValue]> = [];
  let after: string | undefined;
  for (;;) {
    const page = await at(ctx, space, version, { ...(limit !== undefined && { limit }), ...(after !== undefined && { after }) });
    entries.push(...page.entries);
    if (!page.more) break;
    after = page.next;
  }
  return Object.fromEntries(entries);
}

/** Runs housekeeping in the space (collectGarbage): it builds a checkpoint of the history when one is due (every 2 versions and the space's entries, in these contexts). */
export async function buildCheckpoint(ctx: SyncContext, space: string): Promise<void> {
  await collectGarbage(ctx, space);
}

/** The versions of the space's whole checkpoints. */
export async function checkpointsOf(ctx: SyncContext, space: string): Promise<number[]> {
  const keys = new SpaceKeys(space);
  const records = await ctx.storage.transaction((tx) => tx.scan({ prefix: keys.checkpointRecordPrefix }), { readOnly: true, space });
  return records.filter(([, record]) => (record as { done: boolean }).done).map(([row]) => parseInt(row.slice(keys.checkpointRecordPrefix.length), 16));
}

/** Every row the store holds, as text: what "no value left" is checked against. */
/** The text of every row of the store, less its feed record. */
export async function everything(storage: Storage): Promise<string> {
  // Less the store's feed record (`s/feed`), which a context writes in the background after its
  // first commit (after-change.ts): on a busy machine it may land between two reads of a test.
  const rows = await storage.transaction((tx) => tx.scan({ prefix: '' }), { readOnly: true });
  return JSON.stringify(rows.filter(([key]) => key !== FEED_RECORD));
}

export function describeHistory(name: string, create: () => Storage | Promise<Storage>, within: Within = async (body) => body(await create())): void {
  describe(`history: ${name}`, () => {
    const it = (title: string, body: (ctx: SyncContext, clock: { now: number }) => Promise<void>) =>
      test(title, () =>
        within(async (storage) => {
          const { ctx, clock } = historyContext(storage);
          await body(ctx, clock);
        }),
      );

    it('at() at every kept version equals what the space held then, from the live entries and from a checkpoint, in pages that join up', async (ctx) => {
      const space = 'at';
      const r = new Recorder(ctx, space);
      await r.modelled({ a: 1, b: 'two', c: { three: [3] } });
      await r.modelled({ a: 2 });
      await r.modelled({ b: undefined, d: 'new' });
      await r.modelled({ 'é/x': 'non-ascii', a: undefined });
      await r.modelled({ b: 'back', c: undefined });
      await buildCheckpoint(ctx, space);
      const [checkpoint] = await checkpointsOf(ctx, space);
      expect(checkpoint).toBe(5);
      await r.modelled({ a: 'after', d: undefined });
      await r.modelled({ e: 5, f: 6, g: 7 });
      await r.modelled({ b: undefined, e: undefined });
      await r.modelled({ a: 'last' });
      for (let version = 0; version <= 9; version++) expect(await stateAt(ctx, space, version), `version ${version}`).toEqual(r.at(version));
      expect(await stateAt(ctx, space, 3, 1)).toEqual(r.at(3));
      expect(await stateAt(ctx, space, 8, 2)).toEqual(r.at(8));
      expect((await at(ctx, space, 7, { prefix: 'é/' })).entries).toEqual([['é/x', 'non-ascii']]);
      await expect(at(ctx, space, 10)).rejects.toThrow(/Version 10 .* is not kept/);
    });

    it('at() reads from the checkpoint nearest the version: the log between the live entries and it is not read', async (ctx) => {
      const space = 'base';
      const r = new Recorder(ctx, space);
      for (let i = 0; i < 6; i++) await r.modelled({ [`k${i % 3}`]: i });
      await buildCheckpoint(ctx, space);
      expect(await checkpointsOf(ctx, space)).toEqual([6]);
      for (let i = 6; i < 20; i++) await r.modelled({ [`k${i % 4}`]: i });
      // Versions 5 and 7 are one version from the checkpoint, 15 and 13 from the live entries:
      // without the log of versions 10 to 19, only a read from the checkpoint gets them right.
      const keys = new SpaceKeys(space);
      await ctx.storage.transaction(
        async (tx) => {
          for (const [row] of await tx.scan({ prefix: keys.logPrefix, start: { key: keys.logRow(10, 0) } }))
            if (keys.logPlace(row).version < 20) await tx.del(row);
        },
        { readOnly: false, space },
      );
      expect(await stateAt(ctx, space, 5)).toEqual(r.at(5));
      expect(await stateAt(ctx, space, 7)).toEqual(r.at(7));
    });

    it("readHistory gives every value a key had, when, and what made it; a prefix's changes, read on in pages", async (ctx) => {
      const space = 'key';
      const r = new Recorder(ctx, space);
      const v1 = await r.modelled({ doc: 'one', other: 1 }, 'ann');
      const v2 = await r.modelled({ other: 2 }, 'bob');
      const v3 = await r.modelled({ doc: 'two' }, 'bob');
      const v4 = await r.modelled({ doc: undefined, 'doc/x': 'x' });
      const page = await readHistory(ctx, space, { key: 'doc' });
      expect(
        page.changes.map(({ version, key, before, after, by }) => ({ version, key, before, after, user: 'userID' in by ? by.userID : undefined })),
      ).toEqual([
        { version: v1, key: 'doc', before: undefined, after: 'one', user: 'ann' },
        { version: v3, key: 'doc', before: 'one', after: 'two', user: 'bob' },
        { version: v4, key: 'doc', before: 'two', after: undefined, user: null },
      ]);
      expect(page.kept).toEqual({ from: 0, to: v4 });
      expect(page.more).toBe(false);
      const first = await readHistory(ctx, space, { prefix: 'doc', limit: 1 });
      expect(first.changes.map(({ version }) => version)).toEqual([v1]);
      expect(first.more).toBe(true);
      const rest = await readHistory(ctx, space, { prefix: 'doc', after: first.version });
      expect(rest.changes.map(({ version, key }) => [version, key])).toEqual([
        [v3, 'doc'],
        [v4, 'doc'],
        [v4, 'doc/x'],
      ]);
      expect((await readHistory(ctx, space, { after: v1, key: 'other' })).changes.map(({ version }) => version)).toEqual([v2]);
    });

    it('restore makes the space what it was, as one new version; a dry run writes nothing; a prefix restore leaves the rest', async (ctx) => {
      const space = 'restore';
      const r = new Recorder(ctx, space);
      await r.modelled({ 'todo/1': 'buy', 'todo/2': 'sell', note: 'n1' });
      const good = await r.modelled({ 'todo/3': 'hold' });
      await r.modelled({ 'todo/1': 'BAD', 'todo/2': undefined, 'todo/4': 'BAD', note: 'n2' });
      const bad = (await metaOf(ctx, space))!.version;
      const raw = await everything(ctx.storage);
      const dry = await restoreSpace(ctx, space, { to: good, prefix: 'todo/', dryRun: true });
      expect(dry).toEqual({
        to: good,
        prefix: 'todo/',
        dryRun: true,
        version: undefined,
        changes: [
          { key: 'todo/1', before: 'BAD', after: 'buy' },
          { key: 'todo/2', after: 'sell' },
          { key: 'todo/4', before: 'BAD' },
        ],
      });
      expect(await everything(ctx.storage)).toBe(raw);
      expect((await metaOf(ctx, space))!.version).toBe(bad);

      const done = await restoreSpace(ctx, space, { to: good, prefix: 'todo/' });
      expect(done.version).toBe(bad + 1);
      expect(done.changes).toEqual(dry.changes);
      expect(await stateAt(ctx, space, bad + 1)).toEqual({ ...r.at(good), note: 'n2' });
      // History goes on: the version before the restore reads as it was, and the restore is in the log.
      expect(await stateAt(ctx, space, bad)).toEqual(r.at(bad));
      const logged = await readHistory(ctx, space, { after: bad });
      expect(logged.changes.map(({ key, by }) => [key, by])).toEqual(
        ['todo/1', 'todo/2', 'todo/4'].map((key) => [key, { kind: 'restore', to: good, prefix: 'todo/' }]),
      );
      // The whole space, and again: nothing left to change.
      expect((await restoreSpace(ctx, space, { to: good })).changes).toEqual([{ key: 'note', before: 'n2', after: 'n1' }]);
      expect(await restoreSpace(ctx, space, { to: good })).toMatchObject({ version: undefined, changes: [] });
      expect(await stateAt(ctx, space, (await metaOf(ctx, space))!.version)).toEqual(r.at(good));
    });

    for (const policy of ['stop', 'skip', 'overwrite'] as const) {
      it(`revert by user meets a later write of another user and follows "${policy}"; a dry run lists the same and writes nothing`, async (ctx, clock) => {
        const space = `revert-${policy}`;
        const r = new Recorder(ctx, space);
        await r.modelled({ a: 'base', b: 'base', c: 'base' }, 'admin');
        clock.now += 60_000;
        const since = clock.now;
        const first = await r.modelled({ a: 'rogue', b: 'rogue', d: 'rogue' }, 'rogue');
        const later = await r.modelled({ b: 'fixed by bob', c: 'bob' }, 'bob');
        const now = (await metaOf(ctx, space))!.version;
        const raw = await everything(ctx.storage);
        const conflicts = [
          {
            key: 'b',
            version: first,
            revertTo: 'base',
            current: 'fixed by bob',
            later: [{ version: later, by: { kind: 'backend', call: 'transact', userID: 'bob' } }],
          },
        ];
        const dry = await revertChanges(ctx, space, { userID: 'rogue', since }, { onConflict: policy, dryRun: true });
        expect(await everything(ctx.storage)).toBe(raw);
        const done = await revertChanges(ctx, space, { userID: 'rogue', since }, { onConflict: policy });
        expect(done.conflicts).toEqual(conflicts);
        expect({ ...done, dryRun: true, version: undefined }).toEqual(dry);
        const state = await stateAt(ctx, space, (await metaOf(ctx, space))!.version);
        if (policy === 'stop') {
          expect(done).toMatchObject({ stopped: true, version: undefined, changes: [] });
          expect(state).toEqual(r.at(now));
        } else {
          expect(done).toMatchObject({ stopped: false, version: now + 1 });
          expect(state).toEqual({ a: 'base', b: policy === 'skip' ? 'fixed by bob' : 'base', c: 'bob' });
          expect(await stateAt(ctx, space, now)).toEqual(r.at(now));
        }
      });
    }

    it('erasure of a key and of a user leaves no value of theirs in at(), readHistory, readChanges, exports, checkpoints, or any row', async (ctx) => {
      const space = 'erase';
      const r = new Recorder(ctx, space);
      const start = await r.modelled({ secret: 'SECRET-1', kept: 'fine' }, 'ann');
      await r.modelled({ secret: 'SECRET-2', 'mal/a': 'MALLORY-1' }, 'mallory');
      await r.modelled({ 'mal/b': 'MALLORY-2', kept: 'MALLORY-3' }, 'mallory');
      // A checkpoint is due once the versions since the log's start reach the entries (5).
      await r.modelled({ pad: 1 });
      await r.modelled({ pad: 2 });
      await buildCheckpoint(ctx, space);
      expect(await checkpointsOf(ctx, space)).toEqual([5]);
      await r.modelled({ kept: 'fine again', other: 'ok' }, 'ann');
      const last = await r.modelled({ 'mal/a': 'MALLORY-4' }, 'mallory');

      const byKey = await eraseData(ctx, space, { key: 'secret' });
      expect(byKey).toMatchObject({ version: last + 1, deleted: ['secret'] });
      expect(byKey.historyRows).toBeGreaterThanOrEqual(2);
      expect(byKey.checkpointRows).toBe(1);
      const byUser = await eraseData(ctx, space, { userID: 'mallory' });
      expect(byUser.deleted.sort()).toEqual(['mal/a', 'mal/b']);
      expect(byUser.checkpointRows).toBe(3);
      const now = (await metaOf(ctx, space))!.version;

      const seen: string[] = [];
      for (let version = start - 1; version <= now; version++) seen.push(JSON.stringify(await stateAt(ctx, space, version)));
      seen.push(JSON.stringify(await readHistory(ctx, space)));
      seen.push(JSON.stringify(await readChanges(ctx, space)));
      seen.push(await new Response(exportSpace(ctx, space)).text());
      seen.push(await everything(ctx.storage));
      for (const text of seen) expect(text).not.toMatch(/SECRET|MALLORY/);
      // What is not theirs stays, in every version.
      expect(await stateAt(ctx, space, now)).toEqual({ kept: 'fine again', other: 'ok', pad: 2 });
      expect(await stateAt(ctx, space, start)).toEqual({ kept: 'fine' });
      const erasedKey = (await readHistory(ctx, space, { key: 'secret' })).changes;
      expect(erasedKey.map(({ version, erased, before, after }) => ({ version, erased, before, after }))).toEqual([
        { version: start, erased: 'after', before: undefined, after: undefined },
        { version: start + 1, erased: 'both', before: undefined, after: undefined },
        { version: last + 1, erased: 'before', before: undefined, after: undefined },
      ]);
    });

    it("the history's bytes in inspect and in the meta record equal a recount of its rows, checkpoints and erasures included", async (ctx, clock) => {
      const space = 'bytes';
      const r = new Recorder(ctx, space);
      for (let i = 0; i < 6; i++) await r.modelled({ [`k${i % 4}`]: { i, text: 'x'.repeat(i * 10) }, ...(i === 4 && { k0: undefined }) }, `u${i % 2}`);
      await buildCheckpoint(ctx, space);
      await restoreSpace(ctx, space, { to: 2 });
      clock.now += 1_000;
      await revertChanges(ctx, space, { versions: [3, 4] }, { onConflict: 'overwrite' });
      await eraseData(ctx, space, { userID: 'u1' });
      await buildCheckpoint(ctx, space);
      expect((await checkpointsOf(ctx, space)).length).toBe(2);
      const keys = new SpaceKeys(space);
      const recount = await ctx.storage.transaction((tx) => countHistory(tx, keys), { readOnly: true, space });
      expect(recount).toBeGreaterThan(0);
      expect((await metaOf(ctx, space))!.history).toBe(recount);
      expect((await inspect(ctx, space)).history).toBe(recount);
    });
  });
}
