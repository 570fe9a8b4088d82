/**
 * The change feed's rules, on the memory store (feed-stores.test.ts runs its invariant on every
 * store): what goes into the log, in which order, with what origin; cursors; never a gap.
 */
import { describe, expect, it } from 'vitest';
import { createContext, memoryStorage } from '../../src/index.js';
import { ChangeCursorError, ChangesGoneError, type FeedChange, mutate, readAllChanges, readChanges, transact, turnOffChangeFeed } from '../../src/backend.js';
import { collectGarbage, exportSpace, importSpace, inspect } from '../../src/ops.js';
import { mutation, push, testContext, testMutators } from '../support/helpers.js';

const DAY = 24 * 60 * 60 * 1000;

/** The changes without what varies from run to run. */
function plain(changes: readonly FeedChange[]) {
  return changes.map(({ at: _at, id: _id, space: _space, cursor: _cursor, ...rest }) => rest);
}

describe('the change log', () => {
  it('holds each change of a push in order, with its value before and after and the mutation that made it', async () => {
    const ctx = testContext({ changes: {}, authenticate: () => 'alice' });
    await push(ctx, 'g1', [
      mutation('c1', 1, 'put', { key: 'a', value: 1 }),
      mutation('c1', 2, 'put', { key: 'a', value: 2 }),
      mutation('c1', 3, 'del', { key: 'a' }),
    ]);
    const page = await readChanges(ctx, '');
    const by = (mutationID: number, name: string) => ({ kind: 'mutation', name, clientGroupID: 'g1', clientID: 'c1', mutationID, userID: 'alice' });
    // One push, one commit, one version: the three changes in the order they were made, none coalesced.
    expect(plain(page.changes)).toEqual([
      { version: 1, seq: 0, op: 'set', key: 'a', after: 1, by: by(1, 'put') },
      { version: 1, seq: 1, op: 'set', key: 'a', before: 1, after: 2, by: by(2, 'put') },
      { version: 1, seq: 2, op: 'del', key: 'a', before: 2, by: by(3, 'del') },
    ]);
    expect(page).toMatchObject({ cursor: '1', more: false, version: 1 });
    expect(page.changes.map(({ id }) => id)).toEqual([':1:0', ':1:1', ':1:2']);
  });

  it('holds nothing of a mutation that failed, and nothing of a push that only advanced lastMutationIDs', async () => {
    const ctx = testContext({ changes: {} });
    await push(ctx, 'g1', [mutation('c1', 1, 'putThenFail', { key: 'x', value: 1 }), mutation('c1', 2, 'put', { key: 'y', value: 2 })]);
    await push(ctx, 'g1', [mutation('c1', 3, 'putThenFail', { key: 'x', value: 1 })]);
    // A temporary error stops the push: the mutation is not processed, and its write is not logged.
    await push(ctx, 'g1', [mutation('c1', 4, 'putThenTemporary', { key: 'z', value: 1 })]).catch(() => {});
    const page = await readChanges(ctx, '');
    expect(page.changes.map(({ key, version }: FeedChange & { key?: string }) => [key, version])).toEqual([['y', 1]]);
    // The version moved for mutation 3's lastMutationID; the cursor goes past it.
    expect(page).toMatchObject({ cursor: '2', version: 2 });
  });

  it('names the backend call that made a change: transact, mutate, import', async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, 's', (tx) => tx.set('t', 1), { userID: 'ops' });
    await mutate(ctx, 's', 'put', { key: 'm', value: 2 });
    const dump = '{"viewsync":"space","format":3}\n{"key":"i","value":3}\n{"viewsync":"end","entries":1,"groups":0}\n';
    await importSpace(ctx, 's', new Response(dump).body!, { mode: 'merge' });
    const { changes } = await readChanges(ctx, 's');
    expect(changes.map(({ by }) => by)).toEqual([
      { kind: 'backend', call: 'transact', userID: 'ops' },
      { kind: 'backend', call: 'mutate', name: 'put', userID: null },
      { kind: 'backend', call: 'import', userID: null },
    ]);
  });

  it('keeps the log off unless `changes` is given, and says so to a reader', async () => {
    const ctx = testContext();
    await transact(ctx, '', (tx) => tx.set('a', 1));
    await expect(readChanges(ctx, '')).rejects.toThrow(/never on/);
    await expect(readChanges(ctx, '')).rejects.toBeInstanceOf(ChangesGoneError);
    // An empty space has an empty feed.
    expect(await readChanges(ctx, 'empty')).toMatchObject({ changes: [], cursor: '0', more: false, version: 0 });
  });
});

describe('cursors', () => {
  it('resume after any change, mid-version too, and pages split where the limit falls', async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, '', async (tx) => {
      for (let i = 0; i < 5; i++) await tx.set(`k${i}`, i);
    });
    await transact(ctx, '', (tx) => tx.set('k0', 'again'));
    const all = (await readChanges(ctx, '')).changes;
    expect(all).toHaveLength(6);
    const read: FeedChange[] = [];
    let after = '0';
    for (;;) {
      const page = await readChanges(ctx, '', { after, limit: 2 });
      read.push(...page.changes);
      after = page.cursor;
      if (!page.more) break;
    }
    expect(read).toEqual(all);
    expect(after).toBe('2');
    for (const [i, change] of all.entries()) expect((await readChanges(ctx, '', { after: change.cursor })).changes).toEqual(all.slice(i + 1));
  });

  it('refuse what the feed never gave out, with a ChangeCursorError', async () => {
    const ctx = testContext({ changes: {} });
    for (const bad of ['', '-1', '1.', '01', '1.2.3', 'x', '1e3', ' 1', '99999999999999999']) {
      await expect(readChanges(ctx, '', { after: bad }), bad).rejects.toBeInstanceOf(ChangeCursorError);
    }
    await expect(readChanges(ctx, '', { limit: 0 })).rejects.toThrow(RangeError);
  });

  it("ahead of the space (another space's, made by hand, or its store lost commits) are refused, never answered with nothing", async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, '', (tx) => tx.set('a', 1));
    await expect(readChanges(ctx, '', { after: '5' })).rejects.toThrow(/ahead of space/);
  });

  it('one ahead is told as the likely mistake it is (the next version for the last one read), not as lost commits', async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, '', (tx) => tx.set('a', 1));
    const oneAhead = await readChanges(ctx, '', { after: '2' }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(oneAhead).toBeInstanceOf(ChangesGoneError);
    expect(oneAhead!.message).toMatch(
      /^The cursor 2 is ahead of space "", at version 1, so this space's feed has not given it out: it is another space's, or made by hand \(a cursor names the last version read, not the next: "1" reads what comes after version 1\)\. If this space's feed did give it out/,
    );
    expect(oneAhead!.message).not.toMatch(/its store lost commits/);
    // Further ahead, no hint about the next version: it would be a guess.
    await expect(readChanges(ctx, '', { after: '5' })).rejects.toThrow(/made by hand\. If this space's feed/);
  });
});

describe('never a gap', () => {
  it('a cursor from before the feed was turned on is refused, and an export gives the cursor to start from', async () => {
    const storage = memoryStorage();
    const off = createContext({ storage, mutators: testMutators });
    await transact(off, '', (tx) => tx.set('a', 1));
    const on = createContext({ storage, mutators: testMutators, changes: {} });
    await transact(on, '', (tx) => tx.set('b', 2));
    await expect(readChanges(on, '', { after: '0' })).rejects.toThrow(/holds the changes after version 1 only/);
    const header = JSON.parse((await new Response(exportSpace(on, '')).text()).split('\n')[0]!) as { version: number };
    expect(header.version).toBe(2);
    await transact(on, '', (tx) => tx.set('c', 3));
    expect(plain((await readChanges(on, '', { after: String(header.version) })).changes).map((change) => change.version)).toEqual([3]);
    // From version 1 (before b), the log is whole.
    expect((await readChanges(on, '', { after: '1' })).changes).toHaveLength(2);
  });

  it('a write with the feed turned off breaks the log off: readers get what came before, then an error, until it restarts', async () => {
    const storage = memoryStorage();
    const on = createContext({ storage, mutators: testMutators, changes: {} });
    const off = createContext({ storage, mutators: testMutators });
    await transact(on, '', (tx) => tx.set('a', 1));
    await turnOffChangeFeed(off);
    await transact(off, '', (tx) => tx.set('b', 2));
    const before = await readChanges(on, '');
    expect(before.changes).toHaveLength(1);
    expect(before.cursor).toBe('1');
    await expect(readChanges(on, '', { after: before.cursor })).rejects.toThrow(/written without the change feed/);
    await transact(on, '', (tx) => tx.set('c', 3));
    // Restarted at version 2: b is not in the log, so a reader from 1 is refused, one from 2 is not.
    await expect(readChanges(on, '', { after: '1' })).rejects.toBeInstanceOf(ChangesGoneError);
    expect(plain((await readChanges(on, '', { after: '2' })).changes)).toMatchObject([{ key: 'c', version: 3 }]);
  });

  it('housekeeping trims the log past retention.changesMs, and a cursor it passed is refused', async () => {
    let now = Date.UTC(2026, 0, 1);
    const ctx = testContext({ changes: {}, clock: () => now, retention: { changesMs: DAY } });
    await transact(ctx, '', (tx) => tx.set('old', 1));
    expect((await inspect(ctx, '')).changes).toEqual({ rows: 1, from: 0, oldest: now, checkpoints: [] });
    now += 2 * DAY;
    // Through a context of its own: this one would start housekeeping after the write.
    await transact(createContext({ ...ctx.options }), '', (tx) => tx.set('new', 2));
    const collected = await collectGarbage(ctx);
    expect(collected.changes).toBe(1);
    expect((await inspect(ctx, '')).changes).toMatchObject({ rows: 1, from: 1, oldest: now });
    await expect(readChanges(ctx, '', { after: '0' })).rejects.toThrow(/holds the changes after version 1 only/);
    expect(plain((await readChanges(ctx, '', { after: '1' })).changes)).toMatchObject([{ key: 'new' }]);
  });
});

describe('the feed of every space', () => {
  it('pages through every space, each change once, going on where the last page stopped', async () => {
    const ctx = testContext({ changes: {} });
    for (const space of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) await transact(ctx, space, (tx) => tx.set(`k${i}`, i));
    const read: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await readAllChanges(ctx, { after, limit: 2 });
      read.push(...page.changes.map(({ space, version }) => `${space}${version}`));
      after = page.cursor;
      if (!page.more) break;
    }
    expect(read).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'b3', 'c1', 'c2', 'c3']);
    expect(JSON.parse(after!)).toEqual({ spaces: { a: '3', b: '3', c: '3' } });
    // A busy space does not hold the others back: the next page starts where this one stopped.
    await transact(ctx, 'a', async (tx) => {
      for (let i = 0; i < 5; i++) await tx.set(`more${i}`, i);
    });
    await transact(ctx, 'c', (tx) => tx.set('late', 1));
    const first = await readAllChanges(ctx, { after, limit: 3 });
    const second = await readAllChanges(ctx, { after: first.cursor, limit: 3 });
    expect([first.changes.map(({ space }) => space), JSON.parse(first.cursor).next]).toEqual([['a', 'a', 'a'], 'a']);
    expect(second.changes.map(({ space }) => space)).toEqual(['a', 'a', 'c']);
  });

  it('starts a space it does not name at the oldest change its log holds, refuses a cursor it did not give out, and names a space whose changes are gone', async () => {
    let now = Date.UTC(2026, 0, 1);
    const storage = memoryStorage();
    await transact(createContext({ storage, mutators: testMutators }), 'old', (tx) => tx.set('a', 1));
    const ctx = createContext({ storage, mutators: testMutators, changes: {}, clock: () => now, retention: { changesMs: DAY } });
    await transact(ctx, 'trimmed', (tx) => tx.set('a', 1));
    now += 2 * DAY;
    await transact(ctx, 'trimmed', (tx) => tx.set('b', 2));
    await collectGarbage(ctx);
    await transact(ctx, 'new', (tx) => tx.set('a', 1));
    for (const bad of ['x', '[]', '{"spaces":{"a":"x"}}', '{"spaces":{},"next":1}'])
      await expect(readAllChanges(ctx, { after: bad }), bad).rejects.toBeInstanceOf(ChangeCursorError);
    // A reader new to the store: each space from what its log holds (none of old's, one of trimmed's).
    const fresh = await readAllChanges(ctx);
    expect(fresh.changes.map(({ space, version }) => `${space}${version}`)).toEqual(['new1', 'trimmed2']);
    expect(JSON.parse(fresh.cursor)).toEqual({ spaces: { new: '1', old: '1', trimmed: '2' } });
    // A space it names whose changes are gone is refused, saying how the others go on.
    const behind = JSON.stringify({ spaces: { new: '1', old: '1', trimmed: '0' } });
    await expect(readAllChanges(ctx, { after: behind })).rejects.toThrow(
      /space "trimmed" after cursor 0 are gone.*take "trimmed" out of the cursor's "spaces"/,
    );
    await transact(ctx, 'old', (tx) => tx.set('b', 2));
    expect(
      (await readAllChanges(ctx, { after: JSON.stringify({ spaces: { new: '1', old: '1' } }) })).changes.map(({ space, version }) => `${space}${version}`),
    ).toEqual(['old2', 'trimmed2']);
  });
});
