/**
 * Restore as a new version and revert by cause: one commit each, pulled by clients as an ordinary
 * patch (no reset, no cookie going back), carried by the feed as made by the restore or revert;
 * dry runs that write nothing; the causes a revert selects by; its conflict policies; the quota.
 */
import { describe, expect, it } from 'vitest';
import { HistoryGoneError, readChanges, restoreSpace, revertChanges, transact } from '../../src/backend.js';
import { QuotaExceededError } from '../../src/ops.js';
import { applyPatch, mutation, pull, push, testContext } from '../support/helpers.js';

const asUser = (user: string) => ({ 'x-user': user });
const context = (overrides = {}) => testContext({ changes: {}, authenticate: (request) => request.headers.get('x-user'), ...overrides });

describe('restore', () => {
  it('makes the space what it was, in one new version that a client pulls as a patch, no reset', async () => {
    const ctx = context();
    await push(
      ctx,
      'g1',
      [mutation('c1', 1, 'put', { key: 'todo/1', value: 'buy milk' }), mutation('c1', 2, 'put', { key: 'todo/2', value: 'call mum' })],
      asUser('ann'),
    );
    const synced = await pull(ctx, 'g1', null, asUser('ann'));
    await push(
      ctx,
      'g1',
      [
        mutation('c1', 3, 'del', { key: 'todo/1' }),
        mutation('c1', 4, 'put', { key: 'todo/2', value: 'oops' }),
        mutation('c1', 5, 'put', { key: 'todo/3', value: 'new' }),
      ],
      asUser('ann'),
    );
    const dry = await restoreSpace(ctx, '', { to: 1, dryRun: true });
    expect(dry).toEqual({
      to: 1,
      prefix: '',
      dryRun: true,
      version: undefined,
      changes: [
        { key: 'todo/1', after: 'buy milk' },
        { key: 'todo/2', before: 'oops', after: 'call mum' },
        { key: 'todo/3', before: 'new' },
      ],
    });
    // The dry run wrote nothing: the feed has no new version.
    expect((await readChanges(ctx, '')).version).toBe(2);
    const done = await restoreSpace(ctx, '', { to: 1 });
    expect(done).toMatchObject({ version: 3, changes: dry.changes, dryRun: false });
    const next = await pull(ctx, 'g1', synced.cookie, asUser('ann'));
    expect(next.patch.some((op) => op.op === 'clear')).toBe(false);
    expect(applyPatch(applyPatch(new Map(), synced.patch), next.patch)).toEqual(
      new Map([
        ['todo/1', 'buy milk'],
        ['todo/2', 'call mum'],
      ]),
    );
    expect((next.cookie as { order: number }).order).toBeGreaterThan((synced.cookie as { order: number }).order);
    const feed = (await readChanges(ctx, '', { after: '2' })).changes;
    expect(feed.map((change) => [change.version, change.op, change.by])).toEqual([
      [3, 'set', { kind: 'restore', to: 1, prefix: '' }],
      [3, 'set', { kind: 'restore', to: 1, prefix: '' }],
      [3, 'del', { kind: 'restore', to: 1, prefix: '' }],
    ]);
    // Nothing left to change: no new version.
    expect((await restoreSpace(ctx, '', { to: 1 })).version).toBeUndefined();
  });

  it('of a prefix leaves every other key as it is', async () => {
    const ctx = context();
    await transact(ctx, '', async (tx) => (await tx.set('doc/1/title', 'a'), await tx.set('doc/2/title', 'b')));
    await transact(ctx, '', async (tx) => (await tx.set('doc/1/title', 'A'), await tx.set('doc/2/title', 'B'), await tx.set('doc/1/body', 'x')));
    const { changes } = await restoreSpace(ctx, '', { to: 1, prefix: 'doc/1/' });
    expect(changes).toEqual([
      { key: 'doc/1/body', before: 'x' },
      { key: 'doc/1/title', before: 'A', after: 'a' },
    ]);
    expect(await transact(ctx, '', (tx) => tx.get('doc/2/title'))).toBe('B');
  });

  it("holds to the space's quota: a restore past it rejects and writes nothing", async () => {
    const ctx = context({ quotas: { entries: 2 } });
    await transact(ctx, '', async (tx) => (await tx.set('a', 1), await tx.set('b', 2)));
    await transact(ctx, '', async (tx) => (await tx.del('a'), await tx.del('b')));
    await transact(ctx, '', async (tx) => (await tx.set('c', 3), await tx.set('d', 4)));
    await expect(restoreSpace(ctx, '', { to: 1, prefix: 'a' })).rejects.toThrow(QuotaExceededError);
    expect((await readChanges(ctx, '')).version).toBe(3);
  });

  it('refuses a version the space does not keep', async () => {
    const ctx = context();
    await transact(ctx, '', (tx) => tx.set('a', 1));
    await expect(restoreSpace(ctx, '', { to: 5 })).rejects.toThrow(HistoryGoneError);
  });
});

describe('revert', () => {
  /** Ann and Bob edit; Mallory vandalises two keys, one of which Bob then edits. */
  async function vandalised() {
    const ctx = context();
    await push(ctx, 'ga', [mutation('ca', 1, 'put', { key: 'a', value: 'ann' }), mutation('ca', 2, 'put', { key: 'b', value: 'ann' })], asUser('ann'));
    await push(
      ctx,
      'gm',
      [
        mutation('cm', 1, 'put', { key: 'a', value: 'junk' }),
        mutation('cm', 2, 'put', { key: 'b', value: 'junk' }),
        mutation('cm', 3, 'put', { key: 'm', value: 'junk' }),
      ],
      asUser('mallory'),
    );
    await push(ctx, 'gb', [mutation('cb', 1, 'put', { key: 'b', value: 'bob fixed it' })], asUser('bob'));
    return ctx;
  }

  it("undoes one user's changes, reports a later write by another as a conflict, and treats it as told (skip)", async () => {
    const ctx = await vandalised();
    const result = await revertChanges(ctx, '', { userID: 'mallory' }, { onConflict: 'skip' });
    expect(result.changes).toEqual([
      { key: 'a', before: 'junk', after: 'ann' },
      { key: 'm', before: 'junk' },
    ]);
    expect(result.conflicts).toEqual([
      {
        key: 'b',
        version: 2,
        revertTo: 'ann',
        current: 'bob fixed it',
        later: [{ version: 3, by: expect.objectContaining({ kind: 'mutation', userID: 'bob' }) }],
      },
    ]);
    expect(result.version).toBe(4);
    expect(await transact(ctx, '', async (tx) => [await tx.get('a'), await tx.get('b'), await tx.get('m')])).toEqual(['ann', 'bob fixed it', undefined]);
    expect((await readChanges(ctx, '', { after: '3' })).changes.every((change) => change.by.kind === 'revert')).toBe(true);
  });

  it('overwrites a conflicting key when told, and changes nothing when told to stop', async () => {
    const stopped = await vandalised();
    const stop = await revertChanges(stopped, '', { userID: 'mallory' });
    expect(stop).toMatchObject({ stopped: true, changes: [], version: undefined });
    expect(stop.conflicts.map(({ key }) => key)).toEqual(['b']);
    expect((await readChanges(stopped, '')).version).toBe(3);
    const overwritten = await vandalised();
    const result = await revertChanges(overwritten, '', { userID: 'mallory' }, { onConflict: 'overwrite' });
    expect(result.changes.map(({ key, after }) => [key, after])).toEqual([
      ['a', 'ann'],
      ['b', 'ann'],
      ['m', undefined],
    ]);
    expect(await transact(overwritten, '', (tx) => tx.get('b'))).toBe('ann');
  });

  it('lists in a dry run exactly what it would change and every conflict, writing nothing', async () => {
    const ctx = await vandalised();
    const dry = await revertChanges(ctx, '', { userID: 'mallory' }, { onConflict: 'skip', dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, version: undefined, changes: [{ key: 'a' }, { key: 'm' }], conflicts: [{ key: 'b' }] });
    expect((await readChanges(ctx, '')).version).toBe(3);
  });

  it('selects by one mutation, a client group, a mutator, a window of versions and a time', async () => {
    const ctx = await vandalised();
    const keys = async (cause: Parameters<typeof revertChanges>[2]) =>
      (await revertChanges(ctx, '', cause, { onConflict: 'skip', dryRun: true })).changes.map(({ key }) => key);
    expect(await keys({ mutation: { clientID: 'cm', mutationID: 3 } })).toEqual(['m']);
    expect(await keys({ clientGroupID: 'ga' })).toEqual([]);
    expect((await revertChanges(ctx, '', { clientGroupID: 'ga' }, { onConflict: 'skip', dryRun: true })).conflicts.map(({ key }) => key)).toEqual(['a', 'b']);
    expect(await keys({ mutator: 'put', versions: [2, 2] })).toEqual(['a', 'm']);
    expect(await keys({ versions: [3, 3] })).toEqual(['b']);
    expect((await revertChanges(ctx, '', { versions: [0, 1] }, { dryRun: true })).conflicts.map(({ key }) => key)).toEqual(['a', 'b']);
    expect(await keys({ since: Date.now() + 60_000 })).toEqual([]);
  });

  it('refuses a cause that names nothing, or names something wrongly, with a TypeError', async () => {
    const ctx = await vandalised();
    await expect(revertChanges(ctx, '', {})).rejects.toThrow(/needs a cause/);
    await expect(revertChanges(ctx, '', { user: 'mallory' } as never)).rejects.toThrow(/no field "user"/);
    await expect(revertChanges(ctx, '', { versions: [5, 2] })).rejects.toThrow(/from <= to/);
    await expect(revertChanges(ctx, '', { mutation: { clientID: 'c' } } as never)).rejects.toThrow(/clientID, mutationID/);
    await expect(revertChanges(ctx, '', { userID: 'x' }, { onConflict: 'merge' as never })).rejects.toThrow(/onConflict/);
    expect((await readChanges(ctx, '')).version).toBe(3);
  });
});
