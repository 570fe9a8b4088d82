/**
 * Reading history: a space as of a version (`at`), a key's history (`readHistory`), what is kept
 * (`retention.historyMs`, a log broken off), checkpoints (written only with `history`, read from
 * the nearest, removed once the log no longer reaches them) and what history counts for.
 */
import { describe, expect, it } from 'vitest';
import type { Storage } from '../../src/index.js';
import { at, HistoryGoneError, readHistory, transact, turnOffChangeFeed } from '../../src/backend.js';
import { collectGarbage, inspect } from '../../src/ops.js';
import { countHistory } from '../../src/sync/history/history-bytes.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { testContext } from '../support/helpers.js';

const DAY = 24 * 60 * 60 * 1000;

/** Writes `n` versions, each setting `k<i % keys>` to `i`. */
async function writeVersions(ctx: Parameters<typeof transact>[0], n: number, keys = 10): Promise<void> {
  for (let i = 1; i <= n; i++) await transact(ctx, '', (tx) => tx.set(`k${String(i % keys).padStart(2, '0')}`, i));
}

describe('a space as of a version', () => {
  it('is what the space held then: sets, overwrites and deletes undone, in key order, under a prefix, a page at a time', async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, '', async (tx) => (await tx.set('a/1', 1), await tx.set('a/2', 2), await tx.set('b', 3)));
    await transact(ctx, '', async (tx) => (await tx.set('a/1', 10), await tx.del('b')));
    await transact(ctx, '', async (tx) => (await tx.del('a/2'), await tx.set('c', 4)));
    expect((await at(ctx, '', 0)).entries).toEqual([]);
    expect((await at(ctx, '', 1)).entries).toEqual([
      ['a/1', 1],
      ['a/2', 2],
      ['b', 3],
    ]);
    expect((await at(ctx, '', 2)).entries).toEqual([
      ['a/1', 10],
      ['a/2', 2],
    ]);
    expect((await at(ctx, '', 3)).entries).toEqual([
      ['a/1', 10],
      ['c', 4],
    ]);
    expect((await at(ctx, '', 1, { prefix: 'a/' })).entries).toEqual([
      ['a/1', 1],
      ['a/2', 2],
    ]);
    const first = await at(ctx, '', 1, { limit: 2 });
    expect(first).toMatchObject({
      entries: [
        ['a/1', 1],
        ['a/2', 2],
      ],
      more: true,
      next: 'a/2',
    });
    expect(await at(ctx, '', 1, { after: first.next! })).toMatchObject({ entries: [['b', 3]], more: false });
  });

  it('orders keys as the store does (UTF-8), astral characters after U+FFFF-range ones', async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, '', async (tx) => (await tx.set('\u{1F600}', 1), await tx.set('\uFFFD', 2), await tx.set('x', 3)));
    await transact(ctx, '', async (tx) => (await tx.del('\uFFFD'), await tx.set('\u{1F600}', 4)));
    // Version 1 is read by undoing version 2's changes, merged with the live rows in store order.
    expect((await at(ctx, '', 1)).entries.map(([key]) => key)).toEqual(['x', '\uFFFD', '\u{1F600}']);
  });

  it('is refused with a HistoryGoneError for a version the space does not keep, and a TypeError for one that is no version', async () => {
    const ctx = testContext({ changes: {} });
    await writeVersions(ctx, 3);
    await expect(at(ctx, '', 4)).rejects.toThrow(HistoryGoneError);
    await expect(at(ctx, '', 4)).rejects.toThrow(/holds versions 0 to 3/);
    await expect(at(ctx, '', -1)).rejects.toThrow(TypeError);
    await expect(at(ctx, '', 1.5)).rejects.toThrow(TypeError);
    await expect(at(ctx, '', 1, { limit: 0 })).rejects.toThrow(TypeError);
    // A space whose log is not kept has no history.
    const off = testContext();
    await writeVersions(off, 2);
    await expect(at(off, '', 1)).rejects.toThrow(/keeps no history now/);
  });

  it('is refused once the feed was turned off for a write, and kept again from the next write that keeps the log', async () => {
    const ctx = testContext({ changes: {} });
    await writeVersions(ctx, 2);
    const other = testContext({ storage: ctx.storage });
    await turnOffChangeFeed(other);
    await writeVersions(other, 1);
    await expect(at(ctx, '', 1)).rejects.toThrow(HistoryGoneError);
    await writeVersions(ctx, 1);
    // The log starts again at version 3: versions from 3 on are kept.
    expect((await at(ctx, '', 3)).entries.length).toBeGreaterThan(0);
    await expect(at(ctx, '', 2)).rejects.toThrow(/holds versions 3 to 4/);
  });
});

describe("a key's history", () => {
  it('lists every value a key had, when, and what made it, oldest first, in pages that end between versions', async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, '', async (tx) => (await tx.set('a', 1), await tx.set('b', 1)), { userID: 'ann' });
    await transact(ctx, '', async (tx) => (await tx.set('a', 2), await tx.set('b', 2)));
    await transact(ctx, '', (tx) => tx.del('a'));
    const page = await readHistory(ctx, '', { key: 'a' });
    expect(page.changes.map(({ version, before, after, by }) => ({ version, before, after, user: 'userID' in by ? by.userID : undefined }))).toEqual([
      { version: 1, before: undefined, after: 1, user: 'ann' },
      { version: 2, before: 1, after: 2, user: null },
      { version: 3, before: 2, after: undefined, user: null },
    ]);
    expect(page).toMatchObject({ kept: { from: 0, to: 3 }, more: false, version: 3 });
    // Two rows a version: a page of 1 still ends with its version whole, and the next goes on after it.
    const first = await readHistory(ctx, '', { limit: 1 });
    expect(first.changes.map(({ key, version }) => [key, version])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    expect(first.more).toBe(true);
    const second = await readHistory(ctx, '', { limit: 1, after: first.version });
    expect(second.changes.map(({ key, version }) => [key, version])).toEqual([
      ['a', 2],
      ['b', 2],
    ]);
    expect((await readHistory(ctx, '', { prefix: 'b' })).changes).toHaveLength(2);
    await expect(readHistory(ctx, '', { limit: 10_001 })).rejects.toThrow(TypeError);
    await expect(readHistory(ctx, '', { key: 'a', prefix: 'b' })).rejects.toThrow(/key or prefix, not both/);
  });
});

describe('retention', () => {
  it('keeps the log for the longer of historyMs and changesMs: history past the feed, and the feed past history', async () => {
    let now = Date.UTC(2026, 0, 1);
    const clock = () => now;
    const ctx = testContext({ changes: {}, clock, retention: { changesMs: DAY, historyMs: 10 * DAY } });
    await writeVersions(ctx, 3);
    now += 5 * DAY;
    await writeVersions(ctx, 1);
    await collectGarbage(ctx, '');
    expect((await at(ctx, '', 1)).entries).toEqual([['k01', 1]]);
    now += 6 * DAY;
    await collectGarbage(ctx, '');
    await expect(at(ctx, '', 1)).rejects.toThrow(HistoryGoneError);
    expect((await at(ctx, '', 3)).entries).toHaveLength(3);
    // historyMs defaults to changesMs.
    const plain = testContext({ changes: {}, clock, retention: { changesMs: DAY } });
    await writeVersions(plain, 2);
    now += 2 * DAY;
    await writeVersions(plain, 1);
    await collectGarbage(plain, '');
    await expect(at(plain, '', 1)).rejects.toThrow(HistoryGoneError);
    expect(() => testContext({ retention: { historyMs: -1 } })).toThrow(/retention.historyMs/);
  });
});

describe('checkpoints', () => {
  it('are written by housekeeping only where the context keeps history, every checkpointEvery versions or the entry count', async () => {
    const feedOnly = testContext({ changes: {} });
    await writeVersions(feedOnly, 40);
    await collectGarbage(feedOnly, '');
    expect((await inspect(feedOnly, '')).changes?.checkpoints).toEqual([]);

    const ctx = testContext({ history: { checkpointEvery: 15 } });
    await writeVersions(ctx, 40);
    await collectGarbage(ctx, '');
    // The first is due at version 15 (10 entries, fewer than 15): housekeeping ran once, at 40.
    expect((await inspect(ctx, '')).changes?.checkpoints).toEqual([{ version: 40, rows: 10, done: true }]);
    await writeVersions(ctx, 14);
    await collectGarbage(ctx, '');
    expect((await inspect(ctx, '')).changes?.checkpoints).toHaveLength(1);
    await writeVersions(ctx, 1);
    await collectGarbage(ctx, '');
    expect((await inspect(ctx, '')).changes?.checkpoints?.map(({ version }) => version)).toEqual([40, 55]);
    expect(() => testContext({ history: { checkpointEvery: 0 } })).toThrow(/history.checkpointEvery/);
  });

  it('make a read far back read the log from the nearest checkpoint, not from now, with the same answer', async () => {
    const ctx = testContext({ history: { checkpointEvery: 100 } });
    await writeVersions(ctx, 200);
    const before = (await at(ctx, '', 90)).entries;
    await collectGarbage(ctx, '');
    await writeVersions(ctx, 1_000);
    const logRows = async (version: number) => {
      const scanned = { rows: 0 };
      const spy = testContext({ storage: spyLog(ctx.storage, scanned), changes: {} });
      const entries = (await at(spy, '', version)).entries;
      return { entries, rows: scanned.rows };
    };
    const far = await logRows(90);
    expect(far.entries).toEqual(before);
    // From the checkpoint at 200: about 110 rows of the log, not the 1,110 since.
    expect(far.rows).toBeLessThan(300);
  });

  it('go once the log is trimmed past them, and count in the history bytes as a recount does', async () => {
    let now = Date.UTC(2026, 0, 1);
    const ctx = testContext({ history: { checkpointEvery: 5 }, clock: () => now, retention: { changesMs: DAY } });
    await writeVersions(ctx, 20, 4);
    await collectGarbage(ctx, '');
    const keys = new SpaceKeys('');
    const recount = () => ctx.storage.transaction((tx) => countHistory(tx, keys), { readOnly: true });
    const summary = await inspect(ctx, '');
    expect(summary.changes?.checkpoints).toEqual([{ version: 20, rows: 4, done: true }]);
    expect(summary.history).toBe(await recount());
    // Trimmed up to its version, the log still starts at it: a read at 20 reads it whole.
    now += 2 * DAY;
    await writeVersions(ctx, 1, 4);
    await collectGarbage(ctx, '');
    expect((await inspect(ctx, '')).changes?.checkpoints).toEqual([{ version: 20, rows: 4, done: true }]);
    expect((await at(ctx, '', 20)).entries).toHaveLength(4);
    now += 2 * DAY;
    await writeVersions(ctx, 1, 4);
    await collectGarbage(ctx, '');
    const after = await inspect(ctx, '');
    expect(after.changes?.checkpoints).toEqual([]);
    expect(after.history).toBe(await recount());
    // The space's counter (what quotas read) agrees.
    const meta = await ctx.storage.transaction((tx) => tx.get(keys.meta), { readOnly: true });
    expect((meta as { history: number }).history).toBe(await recount());
  });
});

/** A store over `storage` whose scans of the change log (`f/`) count the rows they return. */
function spyLog(storage: Storage, scanned: { rows: number }): Storage {
  return {
    transaction: (fn, options) =>
      storage.transaction(
        (tx) =>
          fn({
            get: (key) => tx.get(key),
            put: (key, value) => tx.put(key, value),
            del: (key) => tx.del(key),
            scan: async (scan) => {
              const rows = await tx.scan(scan);
              if (scan.prefix?.startsWith('f/')) scanned.rows += rows.length;
              return rows;
            },
          }),
        options,
      ),
  };
}
