/**
 * A directory checked against what the stores hold, and repaired: a row left naming the store a
 * space left (a move made without the directory) is found, and pointed at the store holding the
 * space, which servers then serve again once the old store is dropped; a missing row is written;
 * a space two stores could hold is left as it is.
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage, type Storage, type SyncContext } from '../../src/index.js';
import { moveSpace } from '../../src/ops.js';
import { checkDirectory, directoryStores, repairDirectory } from '../../src/route/directory.js';
import { directoryKey, type Router, routedStorage, routerOf } from '../../src/route/routed-storage.js';
import { mutation } from '../support/helpers.js';
import { pullFrom, pushTo, spaceContext } from './support.js';

/** 50 entries of `space`, pushed by three client groups (their clients' lastMutationIDs 17, 17 and 16). */
async function seed(ctx: SyncContext, space: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const response = await pushTo(ctx, space, `g${i % 3}`, [mutation(`c${i % 3}`, Math.floor(i / 3) + 1, 'put', { key: `todo/${i}`, value: i })]);
    expect(response.status).toBe(200);
  }
}

/** Each group's full pull of `space`: its status, entries and client's lastMutationID. */
async function served(ctx: SyncContext, space: string): Promise<Array<{ status: number; entries?: number; lastMutationIDChanges?: Record<string, number> }>> {
  const pulls = [];
  for (let group = 0; group < 3; group++) {
    const response = await pullFrom(ctx, space, `g${group}`, null);
    if (response.status !== 200) {
      pulls.push({ status: response.status });
      continue;
    }
    const body = (await response.json()) as { patch: Array<{ op: string }>; lastMutationIDChanges: Record<string, number> };
    pulls.push({ status: 200, entries: body.patch.filter(({ op }) => op === 'put').length, lastMutationIDChanges: body.lastMutationIDChanges });
  }
  return pulls;
}

const WHOLE = [
  { status: 200, entries: 50, lastMutationIDChanges: { c0: 17 } },
  { status: 200, entries: 50, lastMutationIDChanges: { c1: 17 } },
  { status: 200, entries: 50, lastMutationIDChanges: { c2: 16 } },
];

/** A store that no longer answers, as a database shut down. */
const down: Storage = { transaction: () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 10.0.0.2:5432'), { code: 'ECONNREFUSED' })) };

/** The router of a routed storage over `options`: what the directory's check and repair take. */
const routed = (options: Parameters<typeof routedStorage>[0]): Router => routerOf(routedStorage(options))!;

describe('checkDirectory and repairDirectory', () => {
  it('find the row a move made without the directory left naming the old store, and point it at the new one: once the old store is gone, servers serve the space again', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    const place = (space: string) => (space === 'acme' ? 'b' : 'c');
    const servers = spaceContext(routedStorage({ stores: members, directory: 'a', place }));
    await seed(servers, 'acme');
    await seed(servers, 'globex');
    // A move by a router that does not see the store keeping the directory (a CLI not told of it):
    // the space goes to c, and the directory still lists it in b.
    await moveSpace(spaceContext(routedStorage({ stores: { b: members.b, c: members.c }, place })), 'acme', 'c');
    expect(await members.a.transaction((tx) => tx.get(directoryKey('acme')), { readOnly: true, space: 'acme' })).toBe('b');
    expect(await served(servers, 'acme')).toEqual(WHOLE);

    // b is shut down, then dropped from the stores: the space is out of reach, and the errors name b.
    const withBDown = spaceContext(routedStorage({ stores: { a: members.a, b: down, c: members.c }, directory: 'a' }));
    expect(await served(withBDown, 'acme')).toEqual([{ status: 503 }, { status: 503 }, { status: 503 }]);
    expect(String(withBDown.errors[0])).toMatch(/Store "b", which holds space "acme", is unavailable/);
    const dropped = { a: members.a, c: members.c };
    const withoutB = spaceContext(routedStorage({ stores: dropped, directory: 'a' }));
    expect((await served(withoutB, 'acme')).map(({ status }) => status)).not.toContain(200);
    expect(String(withoutB.errors[0])).toMatch(/lists space "acme" in store "b", which is not one of options\.stores \(a, c\): .*'viewsync directory repair'/);
    expect(await served(withoutB, 'globex')).toEqual(WHOLE);

    // While b is still listed, the row is stale; once dropped, it names an unknown store.
    expect(await checkDirectory(routed({ stores: members, directory: 'a' }))).toEqual([
      { space: 'acme', listed: 'b', inUse: 'c', kind: 'stale', reason: expect.stringMatching(/^is listed in "b", while "c" holds its copy in use/) },
    ]);
    const router = routed({ stores: dropped, directory: 'a' });
    const [problem] = await checkDirectory(router);
    expect(problem).toEqual({
      space: 'acme',
      listed: 'b',
      inUse: 'c',
      kind: 'unknown-store',
      reason: expect.stringMatching(
        /^is listed in "b", which is not one of the stores \(a, c\), while "c" holds its copy in use: a repair points the row there$/,
      ),
    });
    expect(await repairDirectory(router)).toEqual({ repaired: [problem], left: [] });
    expect(await checkDirectory(router)).toEqual([]);

    // A server started after the repair serves the space, whole; its clients go on where they were.
    const after = spaceContext(routedStorage({ stores: dropped, directory: 'a' }));
    expect(await served(after, 'acme')).toEqual(WHOLE);
    expect((await pushTo(after, 'acme', 'g0', [mutation('c0', 18, 'put', { key: 'todo/new', value: 1 })])).status).toBe(200);
    expect((await served(after, 'acme'))[0]).toEqual({ status: 200, entries: 51, lastMutationIDChanges: { c0: 18 } });
  });

  it('a move to the store already holding the space points a stale row at it', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    const servers = spaceContext(routedStorage({ stores: members, directory: 'a', place: () => 'b' }));
    await seed(servers, 'acme');
    await moveSpace(spaceContext(routedStorage({ stores: { b: members.b, c: members.c }, place: () => 'b' })), 'acme', 'c');
    expect(await moveSpace(servers, 'acme', 'c')).toMatchObject({ from: 'c', to: 'c', moved: false });
    expect(await members.a.transaction((tx) => tx.get(directoryKey('acme')), { readOnly: true, space: 'acme' })).toBe('c');
    expect(await checkDirectory(routed({ stores: members, directory: 'a' }))).toEqual([]);
  });

  it('write a missing row; leave a space two stores could hold, and one no store among them holds', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    // Spaces written before the directory was kept: "old" in b, "split" in b and in c.
    await seed(spaceContext(members.b), 'old');
    await seed(spaceContext(members.b), 'split');
    await seed(spaceContext(members.c), 'split');
    // A row naming a store the router does not have, of a space none of its stores holds.
    await members.a.transaction((tx) => tx.put(directoryKey('gone'), 'z'), { readOnly: false, space: 'gone' });
    const router = routed({ stores: members, directory: 'a' });
    const problems = await checkDirectory(router);
    expect(problems).toEqual([
      {
        space: 'gone',
        listed: 'z',
        inUse: undefined,
        kind: 'unknown-store',
        reason: expect.stringMatching(/no store among them holds it: a repair leaves it/),
      },
      {
        space: 'old',
        listed: undefined,
        inUse: 'b',
        kind: 'missing',
        reason: expect.stringMatching(/^has no directory row, while store "b" holds its copy in use/),
      },
      {
        space: 'split',
        listed: undefined,
        inUse: undefined,
        kind: 'ambiguous',
        reason: expect.stringMatching(
          /stores "b" and "c" each hold a copy that could be the one in use \(store "b" holds rows of space "split" with no route record; store "c" holds rows/,
        ),
      },
    ]);
    const { repaired, left } = await repairDirectory(router);
    expect([repaired.map(({ space }) => space), left.map(({ space }) => space)]).toEqual([['old'], ['gone', 'split']]);
    const rows = await members.a.transaction((tx) => tx.scan({ prefix: 'd/' }), { readOnly: true });
    expect(rows).toEqual([
      ['d/gone/', 'z'],
      ['d/old/', 'b'],
    ]);
  });

  it('tell which stores keep a directory, and refuse a router without one', async () => {
    const members = { a: memoryStorage(), b: memoryStorage() };
    expect(await directoryStores(members)).toEqual([]);
    await seed(spaceContext(routedStorage({ stores: members, directory: 'b' })), 's');
    expect(await directoryStores(members)).toEqual(['b']);
    await expect(checkDirectory(routed({ stores: members }))).rejects.toThrow(/keeps no directory/);
  });
});
