/**
 * The change feed is the store's, not a process's: once a context with `changes` wrote, every
 * writer keeps each space's log (the CLI's context, an instance on an older config, `transact`,
 * imports, routed stores), so no write leaves a gap in a feed its readers follow; turning it off
 * is a step of its own (feed-record.ts).
 */
import { describe, expect, it } from 'vitest';
import { createContext, memoryStorage, type Storage, type SyncContext } from '../../src/index.js';
import { changeFeedStatus, ChangesGoneError, type FeedChange, mutate, readChanges, transact, turnOffChangeFeed } from '../../src/backend.js';
import { exportSpace, importSpace, routedStorage } from '../../src/ops.js';
import { FEED_RECORD } from '../../src/sync/feed/feed-record.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import type { Meta } from '../../src/sync/version/records.js';
import { mutation, push, testMutators } from '../support/helpers.js';

/** A server's context: the feed on. */
function server(storage: Storage): SyncContext {
  return createContext({ storage, mutators: testMutators, changes: {}, onError: () => {} });
}

/** What the CLI and an instance without `changes` write through: no feed of its own. */
function plain(storage: Storage): SyncContext {
  return createContext({ storage, mutators: testMutators, pokes: false, onError: () => {}, space: (request) => request.headers.get('x-space') ?? '' });
}

/** `ctx` has written, and the store's record of its feed is in. */
async function recorded(ctx: SyncContext): Promise<void> {
  await ctx.state.feedRecorded;
}

/** The whole feed of `space`, from its start. */
async function wholeFeed(ctx: SyncContext, space: string): Promise<FeedChange[]> {
  const changes: FeedChange[] = [];
  for (let after = '0', more = true; more; ) {
    const page = await readChanges(ctx, space, { after });
    changes.push(...page.changes);
    ({ cursor: after, more } = page);
  }
  return changes;
}

const dumpOf = (entries: Record<string, unknown>) =>
  [
    JSON.stringify({ viewsync: 'space', format: 3 }),
    ...Object.entries(entries).map(([key, value]) => JSON.stringify({ key, value })),
    JSON.stringify({ viewsync: 'end', entries: Object.keys(entries).length, groups: 0 }),
  ].join('\n');

/** A storage that counts the transactions reading the store's feed record. */
function counting(storage: Storage): Storage & { recordReads: number } {
  const counted = {
    recordReads: 0,
    transaction: <T>(fn: Parameters<Storage['transaction']>[0], options: Parameters<Storage['transaction']>[1]) =>
      storage.transaction(
        (tx) =>
          fn({
            ...tx,
            get: (key) => (key === FEED_RECORD && counted.recordReads++, tx.get(key)),
            scan: (o) => tx.scan(o),
            put: (k, v) => tx.put(k, v),
            del: (k) => tx.del(k),
          }),
        options,
      ) as Promise<T>,
  };
  return counted;
}

describe('the change feed, kept by every writer', () => {
  it('a writer without `changes` (the CLI, an older config) keeps the log of a space a server logged: transact, mutate, imports, pushes', async () => {
    const storage = memoryStorage();
    const ctx = server(storage);
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    const cli = plain(storage);
    const dump = await new Response(exportSpace(cli, 's')).text();
    await importSpace(cli, 's', dump.replace('"value":1', '"value":2'), { mode: 'merge' });
    await importSpace(cli, 's', dumpOf({ b: 3 }), { mode: 'replace', clients: false });
    await transact(cli, 's', (tx) => tx.set('c', 4));
    await mutate(cli, 's', 'put', { key: 'd', value: 5 });
    await push(cli, 'g', [mutation('c1', 1, 'put', { key: 'e', value: 6 })], { 'x-space': 's' });
    await transact(ctx, 's', (tx) => tx.set('f', 7));
    const feed = await wholeFeed(ctx, 's');
    expect(
      feed.map((change) => [change.version, change.op, 'key' in change ? change.key : '', change.by.kind === 'backend' ? change.by.call : change.by.kind]),
    ).toEqual([
      [1, 'set', 'a', 'transact'],
      [2, 'set', 'a', 'import'],
      [3, 'set', 'b', 'import'],
      [3, 'del', 'a', 'import'],
      [4, 'set', 'c', 'transact'],
      [5, 'set', 'd', 'mutate'],
      [6, 'set', 'e', 'mutation'],
      [7, 'set', 'f', 'transact'],
    ]);
  });

  it('a space made by a writer without `changes` is logged from its start once the store keeps the feed; before any server wrote, it is not', async () => {
    const storage = memoryStorage();
    const cli = plain(storage);
    await importSpace(cli, 'early', dumpOf({ a: 1 }), { mode: 'replace' });
    await expect(readChanges(cli, 'early')).rejects.toThrow(/never on/);
    expect(await changeFeedStatus(cli)).toEqual([{ on: false, since: null }]);
    const ctx = server(storage);
    await transact(ctx, 'other', (tx) => tx.set('x', 1));
    await recorded(ctx);
    expect(await changeFeedStatus(cli)).toEqual([{ on: true, since: expect.any(Number) }]);
    // A seed, as docs/backend.md shows: a new space from another's dump.
    const seed = await new Response(exportSpace(cli, 'other')).text();
    await importSpace(cli, 'trial', seed, { mode: 'replace', from: 'other' });
    expect((await wholeFeed(ctx, 'trial')).map((change) => [change.version, change.op, 'key' in change && change.key])).toEqual([[1, 'set', 'x']]);
    // A space the log never reached starts it with a server's write, not a plain one.
    await transact(cli, 'early', (tx) => tx.set('b', 2));
    await expect(readChanges(cli, 'early')).rejects.toThrow(/never on/);
    await transact(ctx, 'early', (tx) => tx.set('c', 3));
    expect((await readChanges(cli, 'early', { after: '2' })).changes).toMatchObject([{ key: 'c' }]);
  });

  it("is the store's in every store of a routed storage", async () => {
    const stores = { a: memoryStorage(), b: memoryStorage() };
    const storage = routedStorage({ stores });
    const ctx = server(storage);
    await transact(ctx, 'one', (tx) => tx.set('x', 1));
    await recorded(ctx);
    const cli = plain(routedStorage({ stores }));
    expect(await changeFeedStatus(cli)).toEqual([
      { store: 'a', on: true, since: expect.any(Number) },
      { store: 'b', on: true, since: expect.any(Number) },
    ]);
    for (const space of ['p', 'q', 'r', 's', 't']) await transact(cli, space, (tx) => tx.set('k', space));
    for (const space of ['p', 'q', 'r', 's', 't']) expect((await wholeFeed(ctx, space)).map((change) => change.version)).toEqual([1]);
  });

  it('turns off only by its own step: writers then leave the log, readers are told, and a server with `changes` turns it on again', async () => {
    const storage = memoryStorage();
    const ctx = server(storage);
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    await transact(ctx, 'quiet', (tx) => tx.set('a', 1));
    await recorded(ctx);
    await expect(turnOffChangeFeed(ctx)).rejects.toThrow(/take `changes` and `history` out of every server first/);
    const cli = plain(storage);
    expect(await turnOffChangeFeed(cli)).toEqual({ spaces: 2 });
    expect(await turnOffChangeFeed(cli)).toEqual({ spaces: 0 });
    expect(await changeFeedStatus(cli)).toEqual([{ on: false, since: expect.any(Number) }]);
    await transact(cli, 's', (tx) => tx.set('b', 2));
    await transact(cli, 'new', (tx) => tx.set('b', 2));
    await expect(readChanges(cli, 's', { after: '1' })).rejects.toThrow(/written without the change feed/);
    await expect(readChanges(cli, 'new')).rejects.toThrow(/never on/);
    // Back on: a space no write reached meanwhile goes on without a gap, whoever writes it next.
    const again = server(storage);
    await transact(again, 's', (tx) => tx.set('c', 3));
    await recorded(again);
    await transact(cli, 'quiet', (tx) => tx.set('b', 2));
    expect((await wholeFeed(cli, 'quiet')).map((change) => change.version)).toEqual([1, 2]);
    expect((await readChanges(cli, 's', { after: '2' })).changes).toMatchObject([{ key: 'c' }]);
  });

  it('a log an older viewsync left behind restarts where the store keeps the feed, and is marked off where it does not', async () => {
    const storage = counting(memoryStorage());
    // What a write by viewsync before this rule left: the version on, the log behind.
    const olderWrite = (space: string) =>
      storage.transaction(
        async (tx) => {
          const key = new SpaceKeys(space).meta;
          const meta = (await tx.get(key)) as Meta;
          await tx.put(key, { ...meta, version: meta.version + 1 });
        },
        { readOnly: false, space },
      );
    const ctx = server(storage);
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    await transact(ctx, 'old', (tx) => tx.set('a', 1));
    await recorded(ctx);
    await olderWrite('s');
    const cli = plain(storage);
    await transact(cli, 's', (tx) => tx.set('b', 2));
    await expect(readChanges(cli, 's', { after: '1' })).rejects.toBeInstanceOf(ChangesGoneError);
    expect((await readChanges(cli, 's', { after: '2' })).changes).toMatchObject([{ key: 'b', version: 3 }]);
    // A store no viewsync with this rule told it keeps the feed (its servers were older, or took
    // `changes` out): the broken log is left, and the space marked so that its writes stop asking.
    await storage.transaction((tx) => tx.del(FEED_RECORD), { readOnly: false });
    await olderWrite('old');
    storage.recordReads = 0;
    await transact(cli, 'old', (tx) => tx.set('b', 2));
    await transact(cli, 'old', (tx) => tx.set('c', 3));
    expect(storage.recordReads).toBe(1);
    await expect(readChanges(cli, 'old', { after: '1' })).rejects.toThrow(/written without the change feed/);
  });

  it('costs the hot path nothing: a push to a space whose log is kept, or never was, reads no store record', async () => {
    const storage = counting(memoryStorage());
    const ctx = server(storage);
    await transact(ctx, 'logged', (tx) => tx.set('a', 1));
    const cli = plain(storage);
    await transact(cli, 'unlogged', (tx) => tx.set('a', 1));
    await recorded(ctx);
    storage.recordReads = 0;
    for (const space of ['logged', 'unlogged']) {
      for (let id = 1; id <= 3; id++) await push(cli, `g-${space}`, [mutation('c', id, 'put', { key: `k${id}`, value: id })], { 'x-space': space });
    }
    expect(storage.recordReads).toBe(0);
  });
});
