/**
 * A routed storage on memory stores: each space's rows land in the store its rule or directory
 * names, every transaction follows the route records a move leaves, a store that fails fails only
 * its own spaces, and spaceless transactions are refused plainly.
 */
import { describe, expect, it } from 'vitest';
import { handleRequest, memoryStorage, type Storage } from '../../src/index.js';
import { read, transact } from '../../src/backend.js';
import { checkHealth, collectGarbage, exportSpace, importSpace, inspect, moveSpace } from '../../src/ops.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { rendezvous } from '../../src/route/placement.js';
import { routedStorage } from '../../src/route/routed-storage.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { countingPool } from '../support/counting-pool.js';
import { mutation } from '../support/helpers.js';
import { withReadMany } from '../support/read-many.js';
import { withPostgres } from '../support/stores.js';
import { pullFrom, pushTo, spaceContext } from './support.js';

/** Whether `store` holds `space`'s meta record: its rows are there. */
async function holds(store: Storage, space: string): Promise<boolean> {
  return (await store.transaction((tx) => tx.get(new SpaceKeys(space).meta), { readOnly: true, space })) !== undefined;
}

describe('routedStorage', () => {
  it('puts each space in the store its rule names, and reads it back from there', async () => {
    const stores = { x: memoryStorage(), y: memoryStorage() };
    const ctx = spaceContext(routedStorage({ stores, place: (space) => (space.startsWith('eu-') ? 'y' : 'x') }));
    for (const space of ['eu-1', 'us-1']) expect((await pushTo(ctx, space, 'g', [mutation('c', 1, 'put', { key: 'k', value: space })])).status).toBe(200);
    expect([await holds(stores.x, 'us-1'), await holds(stores.x, 'eu-1'), await holds(stores.y, 'eu-1'), await holds(stores.y, 'us-1')]).toEqual([
      true,
      false,
      true,
      false,
    ]);
    const pulled = await (await pullFrom(ctx, 'eu-1', 'g', null)).json();
    expect(pulled).toMatchObject({ lastMutationIDChanges: { c: 1 }, patch: [{ op: 'clear' }, { op: 'put', key: 'k', value: 'eu-1' }] });
    expect((await inspect(ctx)).spaces.map(({ space, store }) => [space, store])).toEqual([
      ['eu-1', 'y'],
      ['us-1', 'x'],
    ]);
    await expect(collectGarbage(ctx)).resolves.toMatchObject({ clientGroups: 0 });
  });

  it("takes its stores' longest catchUpMs, so a pull of a space on a store with standbys waits for it as on the store itself", () => {
    const lagging = { ...memoryStorage(), catchUpMs: 1_000 };
    expect(routedStorage({ stores: { x: memoryStorage(), y: lagging, z: { ...memoryStorage(), catchUpMs: 200 } }, place: () => 'x' }).catchUpMs).toBe(1_000);
    expect(routedStorage({ stores: { x: memoryStorage(), y: memoryStorage() }, place: () => 'x' }).catchUpMs).toBeUndefined();
  });

  it("spreads spaces by rendezvous hashing, and a store added takes only the new store's share", () => {
    const spaces = Array.from({ length: 3_000 }, (_, i) => `space-${i}`);
    const three = spaces.map((space) => rendezvous(space, ['a', 'b', 'c']));
    const counts = ['a', 'b', 'c'].map((name) => three.filter((placed) => placed === name).length);
    for (const count of counts) expect(count).toBeGreaterThan(850);
    const four = spaces.map((space) => rendezvous(space, ['a', 'b', 'c', 'd']));
    const movedElsewhere = spaces.filter((_, i) => four[i] !== three[i] && four[i] !== 'd');
    expect(movedElsewhere).toEqual([]);
    const toNew = four.filter((placed) => placed === 'd').length;
    expect(toNew).toBeGreaterThan(600);
    expect(toNew).toBeLessThan(900);
  });

  it('with a directory, places a space once and finds it there after the rule changed', async () => {
    const stores = { dir: memoryStorage(), x: memoryStorage(), y: memoryStorage() };
    const first = spaceContext(routedStorage({ stores, directory: 'dir', place: () => 'x' }));
    expect((await pushTo(first, 's', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])).status).toBe(200);
    // A new process whose rule now sends new spaces to y still finds s in x.
    const later = spaceContext(routedStorage({ stores, directory: 'dir', place: () => 'y' }));
    expect(await (await pullFrom(later, 's', 'g', null)).json()).toMatchObject({ lastMutationIDChanges: { c: 1 } });
    expect((await pushTo(later, 't', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])).status).toBe(200);
    expect([await holds(stores.x, 's'), await holds(stores.y, 's'), await holds(stores.y, 't')]).toEqual([true, false, true]);
  });

  it('with a directory, adopts a database that held spaces before: they stay where their data is', async () => {
    const stores = { dir: memoryStorage(), old: memoryStorage(), fresh: memoryStorage() };
    const before = spaceContext(stores.old);
    expect((await pushTo(before, 's', 'g', [mutation('c', 1, 'put', { key: 'k', value: 'kept' })])).status).toBe(200);
    // The rule sends new spaces to the fresh store; s is found where it was, not started again there.
    const ctx = spaceContext(routedStorage({ stores, directory: 'dir', place: () => 'fresh' }));
    expect(await (await pullFrom(ctx, 's', 'g', null)).json()).toMatchObject({
      lastMutationIDChanges: { c: 1 },
      patch: [{ op: 'clear' }, { op: 'put', key: 'k', value: 'kept' }],
    });
    expect((await pushTo(ctx, 's', 'g', [mutation('c', 2, 'put', { key: 'k', value: 'still' })])).status).toBe(200);
    expect([await holds(stores.fresh, 's'), (await (await pullFrom(before, 's', 'g', null)).json()).patch]).toEqual([
      false,
      [{ op: 'clear' }, { op: 'put', key: 'k', value: 'still' }],
    ]);
  });

  it("runs the backend door in each space's store: transact, read, export and import", async () => {
    const stores = { x: memoryStorage(), y: memoryStorage() };
    const ctx = spaceContext(routedStorage({ stores, place: (space) => (space === 'one' ? 'x' : 'y') }));
    await transact(ctx, 'one', (tx) => tx.set('k', 'in x'));
    expect(await read(ctx, 'one', (tx) => tx.get('k'))).toBe('in x');
    await importSpace(ctx, 'two', exportSpace(ctx, 'one'), { mode: 'replace', from: 'one' });
    expect(await read(ctx, 'two', (tx) => tx.get('k'))).toBe('in x');
    expect([await holds(stores.x, 'one'), await holds(stores.y, 'two'), await holds(stores.x, 'two')]).toEqual([true, true, false]);
  });

  it("serves views from each space's store, and a view's cookie stays good after its space moves", async () => {
    const stores = { x: memoryStorage(), y: memoryStorage() };
    const ctx = spaceContext(routedStorage({ stores, place: () => 'x' }), { view: async () => ['doc/'] });
    expect(
      (await pushTo(ctx, 's', 'g', [mutation('c', 1, 'put', { key: 'doc/1', value: 1 }), mutation('c', 2, 'put', { key: 'other/1', value: 1 })])).status,
    ).toBe(200);
    const first = await (await pullFrom(ctx, 's', 'g', null)).json();
    expect(first.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'doc/1', value: 1 }]);
    await moveSpace(ctx, 's', 'y');
    expect(
      (await pushTo(ctx, 's', 'g', [mutation('c', 3, 'put', { key: 'doc/2', value: 2 }), mutation('c', 4, 'put', { key: 'other/2', value: 2 })])).status,
    ).toBe(200);
    expect(await (await pullFrom(ctx, 's', 'g', first.cookie)).json()).toMatchObject({
      lastMutationIDChanges: { c: 4 },
      patch: [{ op: 'put', key: 'doc/2', value: 2 }],
    });
  });

  it('is healthy while any store answers, and says which do not (without their errors)', async () => {
    const broken: Storage = { transaction: () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:5432'), { code: 'ECONNREFUSED' })) };
    const ctx = spaceContext(routedStorage({ stores: { up: memoryStorage(), down: broken } }));
    expect(await checkHealth(ctx)).toMatchObject({
      ok: true,
      status: 'ok',
      stores: { up: { ok: true }, down: { ok: false, reason: expect.stringMatching(/ECONNREFUSED/) } },
    });
    const served = await handleRequest(new Request('http://localhost/health'), ctx);
    expect(served.status).toBe(200);
    const body = await served.json();
    expect(body.stores.down).toEqual({ ok: false });
    const none = spaceContext(routedStorage({ stores: { down: broken } }));
    expect(await checkHealth(none)).toMatchObject({
      ok: false,
      status: 'store-unavailable',
      reason: expect.stringMatching(/no store answered: down: connect ECONNREFUSED/),
    });
    expect((await handleRequest(new Request('http://localhost/health'), none)).status).toBe(503);
  });

  it('refuses a transaction that names no space, and options that cannot work', async () => {
    const a = memoryStorage();
    const storage = routedStorage({ stores: { a } });
    await expect(storage.transaction(async () => 1, { readOnly: true })).rejects.toThrow(/options\.space must name it/);
    expect(() => routedStorage({ stores: {} })).toThrow(/names no store/);
    expect(() => routedStorage({ stores: { a, b: a } })).toThrow(/same store as options\.stores\.a/);
    expect(() => routedStorage({ stores: { a }, directory: 'z' })).toThrow(/not one of options\.stores/);
    const wrong = spaceContext(routedStorage({ stores: { a }, place: () => 'nowhere' }));
    const response = await pushTo(wrong, 's', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })]);
    expect(response.status).toBe(500);
    expect(String(wrong.errors[0])).toMatch(/options\.place put space "s" in "nowhere"/);
  });

  it('checks the route record in the same read as a planned pull, and a stale process follows it', async () => {
    const members = { x: withReadMany(memoryStorage()), y: withReadMany(memoryStorage()) };
    const ctx = spaceContext(routedStorage({ stores: members, place: () => 'x' }));
    const stale = spaceContext(routedStorage({ stores: members, place: () => 'x' }));
    expect((await pushTo(ctx, 's', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])).status).toBe(200);
    const { cookie } = await (await pullFrom(stale, 's', 'g', null)).json();
    // Planned pulls read with readMany alone: a routed store reads the record as one more range.
    expect(await (await pullFrom(stale, 's', 'g', cookie)).json()).toMatchObject({ patch: [] });
    await moveSpace(ctx, 's', 'y');
    expect((await pushTo(ctx, 's', 'g', [mutation('c', 2, 'put', { key: 'k', value: 2 })])).status).toBe(200);
    expect(await (await pullFrom(stale, 's', 'g', cookie)).json()).toMatchObject({
      lastMutationIDChanges: { c: 2 },
      patch: [{ op: 'put', key: 'k', value: 2 }],
    });
  });

  it('on PostgreSQL through a pg Pool, a routed up-to-date pull is still one statement', async () => {
    if (!withPostgres || process.env.DATABASE_URL === undefined) return;
    const { pool, counted, statements } = countingPool(process.env.DATABASE_URL);
    const schema = `routed_${process.pid}`;
    try {
      const ctx = spaceContext(routedStorage({ stores: { only: postgresStorage(counted, { schema }) } }));
      expect((await pushTo(ctx, 's', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])).status).toBe(200);
      const { cookie } = await (await pullFrom(ctx, 's', 'g', null)).json();
      statements.length = 0;
      expect(await (await pullFrom(ctx, 's', 'g', cookie)).json()).toMatchObject({ patch: [] });
      expect(statements).toEqual(['SELECT *']);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    }
  });

  it('fails only the spaces of a store that is down, with a 503 and Retry-After', async () => {
    let down = false;
    const flaky = memoryStorage();
    const failing: Storage = {
      transaction: (fn, options) =>
        down ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })) : flaky.transaction(fn, options),
    };
    const ctx = spaceContext(routedStorage({ stores: { up: memoryStorage(), down: failing }, place: (space) => space }));
    down = true;
    const refused = await pushTo(ctx, 'down', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })]);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ message: expect.stringMatching(/Store "down", which holds space "down", is unavailable/) });
    expect((await pushTo(ctx, 'up', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])).status).toBe(200);
    down = false;
    expect((await pushTo(ctx, 'down', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])).status).toBe(200);
    // With a directory in the store that is down, spaces this process has not placed yet wait for it; those it knows go on.
    const directed = spaceContext(routedStorage({ stores: { up: memoryStorage(), down: failing }, directory: 'down', place: () => 'up' }));
    expect((await pushTo(directed, 'known', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])).status).toBe(200);
    down = true;
    expect((await pushTo(directed, 'known', 'g', [mutation('c', 2, 'put', { key: 'k', value: 2 })])).status).toBe(200);
    const unplaced = await pushTo(directed, 'new', 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })]);
    expect([unplaced.status, unplaced.headers.get('retry-after')]).toEqual([503, '1']);
  });
});
