/**
 * Versioned mutators and reads (`SyncOptions.schema`), through the handlers: an older version's
 * mutations land through their upgrades or are kept as rejected, never dropped unseen; its pulls
 * read today's entries in its shape, incrementally; a version not listed, or a closed one's
 * pulls, get VersionNotSupported.
 */
import { describe, expect, it } from 'vitest';
import {
  createContext,
  handlePull,
  handlePush,
  memoryStorage,
  type JSONValue,
  type Mutators,
  type SchemaOptions,
  type Storage,
  type SyncOptions,
} from '../../src/index.js';
import { readChanges } from '../../src/backend.js';
import { inspect } from '../../src/ops.js';
import { applyPatch, mutation, post, pullBody, pushBody, type PullOK } from '../support/helpers.js';
import { migrateV1Entries, mutatorsV1, mutatorsV2, schemaV2 } from './app.js';
import { transact } from '../../src/backend.js';
import { collectGarbage } from '../../src/ops.js';

function contexts(storage: Storage = memoryStorage(), options: Partial<SyncOptions> = {}) {
  const errors: unknown[] = [];
  const v1 = createContext({
    storage,
    mutators: mutatorsV1 as unknown as Mutators,
    schema: { current: '1' },
    onError: (error) => errors.push(error),
    ...options,
  });
  const v2 = createContext({ storage, mutators: mutatorsV2 as unknown as Mutators, schema: schemaV2, onError: (error) => errors.push(error), ...options });
  return { storage, v1, v2, errors };
}

async function pushAs(ctx: ReturnType<typeof createContext>, schemaVersion: string, group: string, mutations: ReturnType<typeof mutation>[]): Promise<unknown> {
  const response = await handlePush(post('/push', pushBody(group, mutations, { schemaVersion })), ctx);
  expect(response.status).toBe(200);
  return response.json();
}

async function pullAs(
  ctx: ReturnType<typeof createContext>,
  schemaVersion: string,
  group: string,
  cookie: JSONValue,
): Promise<PullOK | { error: string; versionType?: string }> {
  const response = await handlePull(post('/pull', pullBody(group, cookie, { schemaVersion })), ctx);
  expect(response.status).toBe(200);
  return response.json() as Promise<PullOK>;
}

async function pulled(ctx: ReturnType<typeof createContext>, schemaVersion: string, group: string, cookie: JSONValue): Promise<PullOK> {
  const answer = await pullAs(ctx, schemaVersion, group, cookie);
  if ('error' in answer) throw new Error(`pull answered ${JSON.stringify(answer)}`);
  return answer;
}

describe('versioned mutators', () => {
  it('a version 1 mutation pushed to version 2 runs through its upgrade: new args, new layout', async () => {
    const { v2 } = contexts();
    await pushAs(v2, '1', 'g1', [
      mutation('c1', 1, 'addTodo', { id: 'a', text: 'Milk' }),
      mutation('c1', 2, 'bump', { id: 'a' }),
      mutation('c1', 3, 'setDone', { id: 'a', done: true }),
    ]);
    const view = applyPatch(new Map(), (await pulled(v2, '2', 'reader', null)).patch);
    expect(Object.fromEntries(view)).toEqual({ 'task/a': { title: 'Milk', done: true, count: 1 } });
  });

  it('renames, kept mutators and versions two steps back go through each step in turn', async () => {
    const schema: SchemaOptions = {
      current: '3',
      older: [
        { version: '2', mutators: { put: 'write' } },
        {
          version: '1',
          mutators: {
            set: { name: 'put', args: (args) => ({ key: `v1/${(args as { k: string }).k}`, value: (args as { v: JSONValue }).v }) },
            legacy: { run: async (tx) => void (await tx.set('legacy', true)) },
          },
        },
      ],
    };
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: { write: async (tx, args) => void (await tx.set((args as { key: string }).key, (args as { value: JSONValue }).value)) },
      schema,
      onError: () => {},
    });
    await pushAs(ctx, '1', 'g1', [mutation('c1', 1, 'set', { k: 'x', v: 1 }), mutation('c1', 2, 'legacy')]);
    await pushAs(ctx, '2', 'g2', [mutation('c2', 1, 'put', { key: 'y', value: 2 })]);
    await pushAs(ctx, '3', 'g3', [mutation('c3', 1, 'write', { key: 'z', value: 3 })]);
    const view = applyPatch(new Map(), (await pulled(ctx, '3', 'reader', null)).patch);
    expect(Object.fromEntries(view)).toEqual({ 'v1/x': 1, legacy: true, y: 2, z: 3 });
  });

  it('a mutation that cannot be upgraded is kept as rejected (inspect, the feed, onError), and its client moves on', async () => {
    const schema: SchemaOptions = {
      ...schemaV2,
      older: [
        {
          ...schemaV2.older![0]!,
          mutators: {
            ...schemaV2.older![0]!.mutators,
            removeTodo: null,
            setDone: {
              args: () => {
                throw new Error('no mapping for setDone');
              },
            },
          },
        },
      ],
    };
    const { v2, errors } = contexts(memoryStorage(), { schema, changes: {}, clock: () => 1_000 });
    await pushAs(v2, '1', 'g1', [
      mutation('c1', 1, 'addTodo', { id: 'a', text: 'Milk' }),
      mutation('c1', 2, 'removeTodo', { id: 'a' }),
      mutation('c1', 3, 'setDone', { id: 'a', done: true }),
      mutation('c1', 4, 'gone', {}),
      // Today's mutator refuses what the upgrade made of it.
      mutation('c1', 5, 'addTodo', { id: 'b' }),
      mutation('c1', 6, 'bump', { id: 'a' }),
    ]);
    const answer = await pulled(v2, '1', 'g1', null);
    // Every mutation processed, in order: the client moves on.
    expect(answer.lastMutationIDChanges).toEqual({ c1: 6 });
    expect(Object.fromEntries(applyPatch(new Map(), answer.patch))).toEqual({ 'todo/a': { text: 'Milk', done: false, count: 1 } });
    const detail = await inspect(v2, '');
    expect(detail.rejected).toBe(4);
    expect(
      detail.rejectedMutations.map(({ clientGroupID, clientID, id, name, args, schemaVersion, at }) => ({
        clientGroupID,
        clientID,
        id,
        name,
        args,
        schemaVersion,
        at,
      })),
    ).toEqual([
      { clientGroupID: 'g1', clientID: 'c1', id: 2, name: 'removeTodo', args: { id: 'a' }, schemaVersion: '1', at: 1_000 },
      { clientGroupID: 'g1', clientID: 'c1', id: 3, name: 'setDone', args: { id: 'a', done: true }, schemaVersion: '1', at: 1_000 },
      { clientGroupID: 'g1', clientID: 'c1', id: 4, name: 'gone', args: {}, schemaVersion: '1', at: 1_000 },
      { clientGroupID: 'g1', clientID: 'c1', id: 5, name: 'addTodo', args: { id: 'b' }, schemaVersion: '1', at: 1_000 },
    ]);
    expect(detail.rejectedMutations.map(({ reason }) => reason)).toEqual([
      expect.stringMatching(/^MutationUpgradeError: .*no longer applies "removeTodo"/),
      expect.stringMatching(/^MutationUpgradeError: .*threw: no mapping for setDone/),
      expect.stringMatching(/^UnknownMutatorError: /),
      expect.stringMatching(/^TypeError: addTodo: title must be a string/),
    ]);
    const feed = await readChanges(v2, '');
    expect(
      feed.changes
        .filter((change) => change.op === 'event')
        .map((change) => change.op === 'event' && [change.topic, (change.payload as { id: number }).id, change.by]),
    ).toEqual([
      ['viewsync.rejected', 2, expect.objectContaining({ kind: 'mutation', mutationID: 2, clientID: 'c1' })],
      ['viewsync.rejected', 3, expect.objectContaining({ kind: 'mutation', mutationID: 3 })],
      ['viewsync.rejected', 4, expect.objectContaining({ kind: 'mutation', mutationID: 4 })],
      ['viewsync.rejected', 5, expect.objectContaining({ kind: 'mutation', mutationID: 5 })],
    ]);
    expect(errors.map((error) => (error as Error).name)).toEqual(['MutationUpgradeError', 'MutationUpgradeError', 'UnknownMutatorError', 'TypeError']);
  });

  it('a failure of today’s version is not kept as rejected: only older versions’ work is', async () => {
    const { v2 } = contexts();
    await pushAs(v2, '2', 'g1', [mutation('c1', 1, 'addTodo', { id: 'b' })]);
    expect((await inspect(v2, '')).rejectedMutations).toEqual([]);
  });

  it('the feed’s events of rejected mutations are held to the space’s history quota; the kept ring is not', async () => {
    const schema: SchemaOptions = { current: '2', older: [{ version: '1', mutators: { x: null } }] };
    const ctx = createContext({ storage: memoryStorage(), mutators: {}, schema, changes: {}, quotas: { historyBytes: 4_000 }, onError: () => {} });
    await pushAs(
      ctx,
      '1',
      'g1',
      Array.from({ length: 50 }, (_, i) => mutation('c1', i + 1, 'x', { note: 'y'.repeat(200) })),
    );
    const events = (await readChanges(ctx, '', { limit: 1_000 })).changes.filter((change) => change.op === 'event');
    expect(events.length).toBeGreaterThan(0);
    expect(events.length).toBeLessThan(50);
    const detail = await inspect(ctx, '');
    expect(detail.history).toBeLessThanOrEqual(4_000);
    expect(detail.rejectedMutations).toHaveLength(50);
  });

  it('the kept rejections are a ring: a client pushing nothing else costs a bounded space', async () => {
    const schema: SchemaOptions = { current: '2', older: [{ version: '1', mutators: { x: null } }] };
    const ctx = createContext({ storage: memoryStorage(), mutators: {}, schema, onError: () => {} });
    for (let round = 0; round < 11; round++) {
      await pushAs(
        ctx,
        '1',
        'g1',
        Array.from({ length: 100 }, (_, i) => mutation('c1', round * 100 + i + 1, 'x', { i: round * 100 + i + 1 })),
      );
    }
    const detail = await inspect(ctx, '');
    expect(detail.rejected).toBe(1_000);
    expect(detail.rejectedMutations.map(({ id }) => id)).toEqual(Array.from({ length: 1_000 }, (_, i) => 101 + i));
  });
});

describe('versioned reads', () => {
  it('a version 1 client reads version 2’s entries in its own shape, first and then incrementally', async () => {
    const { v2 } = contexts();
    await pushAs(v2, '2', 'g2', [mutation('c2', 1, 'addTodo', { id: 'a', title: 'Milk' }), mutation('c2', 2, 'addTodo', { id: 'b', title: 'Eggs' })]);
    const first = await pulled(v2, '1', 'g1', null);
    expect(first.patch[0]).toEqual({ op: 'clear' });
    let view = applyPatch(new Map(), first.patch);
    expect(Object.fromEntries(view)).toEqual({ 'todo/a': { text: 'Milk', done: false, count: 0 }, 'todo/b': { text: 'Eggs', done: false, count: 0 } });
    await pushAs(v2, '2', 'g2', [mutation('c2', 3, 'setDone', { id: 'a', done: true }), mutation('c2', 4, 'removeTodo', { id: 'b' })]);
    const next = await pulled(v2, '1', 'g1', first.cookie);
    // Only what changed, in version 1's keys: no reset.
    expect(next.patch).toEqual([
      { op: 'put', key: 'todo/a', value: { text: 'Milk', done: true, count: 0 } },
      { op: 'del', key: 'todo/b' },
    ]);
    view = applyPatch(view, next.patch);
    expect(Object.fromEntries(view)).toEqual({ 'todo/a': { text: 'Milk', done: true, count: 0 } });
    // Version 2 reads its own shape, from the same cookie.
    expect((await pulled(v2, '2', 'g3', first.cookie)).patch).toEqual([
      { op: 'put', key: 'task/a', value: { title: 'Milk', done: true, count: 0 } },
      { op: 'del', key: 'task/b' },
    ]);
  });

  it('a read may join entries: a version whose entry is split in two reads it whole, kept by changes to either part', async () => {
    // Version 2 keeps a user's profile in two entries; version 1 held one.
    const schema: SchemaOptions = {
      current: '2',
      older: [
        {
          version: '1',
          read: {
            keys: (key) => (key.startsWith('name/') ? [`user/${key.slice(5)}`] : key.startsWith('email/') ? [`user/${key.slice(6)}`] : []),
            value: async (key, get) => {
              const id = key.slice(5);
              const [name, email] = [await get(`name/${id}`), await get(`email/${id}`)];
              return name === undefined && email === undefined ? undefined : { name: name ?? null, email: email ?? null };
            },
          },
        },
      ],
    };
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: {
        put: async (tx, args) => void (await tx.set((args as { key: string }).key, (args as { value: JSONValue }).value)),
        del: async (tx, args) => void (await tx.del((args as { key: string }).key)),
      },
      schema,
    });
    await pushAs(ctx, '2', 'g2', [
      mutation('c2', 1, 'put', { key: 'name/1', value: 'Ada' }),
      mutation('c2', 2, 'put', { key: 'email/1', value: 'ada@example.com' }),
    ]);
    const first = await pulled(ctx, '1', 'g1', null);
    expect(first.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'user/1', value: { name: 'Ada', email: 'ada@example.com' } }]);
    await pushAs(ctx, '2', 'g2', [mutation('c2', 3, 'put', { key: 'email/1', value: 'ada@lovelace.org' })]);
    expect((await pulled(ctx, '1', 'g1', first.cookie)).patch).toEqual([{ op: 'put', key: 'user/1', value: { name: 'Ada', email: 'ada@lovelace.org' } }]);
    await pushAs(ctx, '2', 'g2', [mutation('c2', 4, 'del', { key: 'name/1' }), mutation('c2', 5, 'del', { key: 'email/1' })]);
    const last = await pulled(ctx, '1', 'g1', first.cookie);
    expect(last.patch).toEqual([{ op: 'del', key: 'user/1' }]);
  });

  it('a version two steps back reads through both steps, composed, and a change reaches it through both', async () => {
    // Version 3 keeps `item/<id>` = {name, tags}; version 2 read `todo/<id>` = {name}; version 1 read `t/<id>` = the name.
    const schema: SchemaOptions = {
      current: '3',
      older: [
        {
          version: '2',
          read: {
            keys: (key) => (key.startsWith('item/') ? [`todo/${key.slice(5)}`] : []),
            value: async (key, get) => {
              const item = (await get(`item/${key.slice(5)}`)) as { name: string } | undefined;
              return item && { name: item.name };
            },
          },
        },
        {
          version: '1',
          read: {
            keys: (key) => (key.startsWith('todo/') ? [`t/${key.slice(5)}`] : []),
            value: async (key, get) => ((await get(`todo/${key.slice(2)}`)) as { name: string } | undefined)?.name,
          },
        },
      ],
    };
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: {
        put: async (tx, args) => void (await tx.set((args as { key: string }).key, (args as { value: JSONValue }).value)),
        del: async (tx, args) => void (await tx.del((args as { key: string }).key)),
      },
      schema,
    });
    await pushAs(ctx, '3', 'g3', [
      mutation('c3', 1, 'put', { key: 'item/1', value: { name: 'Milk', tags: [] } }),
      mutation('c3', 2, 'put', { key: 'item/2', value: { name: 'Eggs', tags: ['x'] } }),
    ]);
    const first = await pulled(ctx, '1', 'g1', null);
    expect(first.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 't/1', value: 'Milk' }, { op: 'put', key: 't/2', value: 'Eggs' }]);
    await pushAs(ctx, '3', 'g3', [
      mutation('c3', 3, 'put', { key: 'item/1', value: { name: 'Oat milk', tags: [] } }),
      mutation('c3', 4, 'del', { key: 'item/2' }),
    ]);
    expect((await pulled(ctx, '1', 'g1', first.cookie)).patch).toEqual([
      { op: 'put', key: 't/1', value: 'Oat milk' },
      { op: 'del', key: 't/2' },
    ]);
    expect((await pulled(ctx, '2', 'g2', first.cookie)).patch).toEqual([
      { op: 'put', key: 'todo/1', value: { name: 'Oat milk' } },
      { op: 'del', key: 'todo/2' },
    ]);
    // The rule holds at each step: version 1's step reading a version 2 key it does not map from fails.
    const wrong = createContext({
      ...ctx.options,
      schema: { ...schema, older: [schema.older![0]!, { version: '1', read: { value: async (_key, get) => get('todo/elsewhere') } }] },
      onError: () => {},
    });
    expect((await handlePull(post('/pull', pullBody('g1', null, { schemaVersion: '1' })), wrong)).status).toBe(500);
  });

  it('a read of a key its keys do not map to fails the pull with a DowngradeError told to onError, and a 500 that reveals nothing', async () => {
    const errors: unknown[] = [];
    const schema: SchemaOptions = { current: '2', older: [{ version: '1', read: { value: async (_key, get) => get('elsewhere') } }] };
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: { put: async (tx, args) => void (await tx.set((args as { key: string }).key, 1)) },
      schema,
      onError: (error) => errors.push(error),
    });
    await pushAs(ctx, '2', 'g2', [mutation('c2', 1, 'put', { key: 'a' })]);
    const response = await handlePull(post('/pull', pullBody('g1', null, { schemaVersion: '1' })), ctx);
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain('elsewhere');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ name: 'DowngradeError', message: expect.stringContaining('make read.keys("elsewhere") return it') });
  });

  it('a read.value that never ends fails the pull with a 503 after limits.appCodeMs, not a pull held for ever', async () => {
    const schema: SchemaOptions = { current: '2', older: [{ version: '1', read: { value: () => new Promise(() => {}) } }] };
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: { put: async (tx, args) => void (await tx.set((args as { key: string }).key, 1)) },
      schema,
      limits: { appCodeMs: 200 },
      onError: () => {},
    });
    await pushAs(ctx, '2', 'g2', [mutation('c2', 1, 'put', { key: 'a' })]);
    const response = await handlePull(post('/pull', pullBody('g1', null, { schemaVersion: '1' })), ctx);
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('ran longer than 200 ms (limits.appCodeMs)');
  });

  it('with a view, an old client reads only what its view covers, and a read outside it reads none', async () => {
    const schema: SchemaOptions = {
      current: '2',
      older: [
        {
          version: '1',
          read: {
            keys: (key) => (key.startsWith('doc/') ? [`d/${key.slice(4)}`] : key.startsWith('secret/') ? [`d/${key.slice(7)}`] : []),
            value: async (key, get) => ({ doc: (await get(`doc/${key.slice(2)}`)) ?? null, secret: (await get(`secret/${key.slice(2)}`)) ?? null }),
          },
        },
      ],
    };
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: { put: async (tx, args) => void (await tx.set((args as { key: string }).key, (args as { value: JSONValue }).value)) },
      schema,
      view: () => ['doc/'],
    });
    await pushAs(ctx, '2', 'g2', [mutation('c2', 1, 'put', { key: 'doc/1', value: 'hello' }), mutation('c2', 2, 'put', { key: 'secret/1', value: 'hidden' })]);
    const { patch } = await pulled(ctx, '1', 'g1', null);
    expect(patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'd/1', value: { doc: 'hello', secret: null } }]);
  });

  it('a view that finds entries through an index serves an old client too, incrementally', async () => {
    // Version 2's to-dos are flat (`task/<id>`), each naming its list; a user sees list `mine`'s.
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: { put: async (tx, args) => void (await tx.set((args as { key: string }).key, (args as { value: JSONValue }).value)) },
      schema: {
        current: '2',
        older: [
          {
            version: '1',
            read: {
              keys: (key) => (key.startsWith('task/') ? [`todo/${key.slice(5)}`] : []),
              value: async (key, get) => {
                const task = (await get(`task/${key.slice(5)}`)) as { title: string } | undefined;
                return task && { text: task.title };
              },
            },
          },
        ],
      },
      indexes: { byList: { prefix: 'task/', jsonPointer: '/list' } },
      view: async (tx) => {
        const keys: string[] = [];
        for await (const [secondary, key] of tx.scan({ indexName: 'byList', prefix: 'mine' }).keys()) if (secondary === 'mine') keys.push(key);
        return keys;
      },
    });
    await pushAs(ctx, '2', 'g2', [
      mutation('c2', 1, 'put', { key: 'task/1', value: { title: 'Milk', list: 'mine' } }),
      mutation('c2', 2, 'put', { key: 'task/2', value: { title: 'Secret', list: 'theirs' } }),
    ]);
    const first = await pulled(ctx, '1', 'g1', null);
    expect(first.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'todo/1', value: { text: 'Milk' } }]);
    // Moved into the view: it appears; moved out: it goes.
    await pushAs(ctx, '2', 'g2', [
      mutation('c2', 3, 'put', { key: 'task/2', value: { title: 'Shared', list: 'mine' } }),
      mutation('c2', 4, 'put', { key: 'task/1', value: { title: 'Milk', list: 'theirs' } }),
    ]);
    const next = await pulled(ctx, '1', 'g1', first.cookie);
    expect(Object.fromEntries(applyPatch(applyPatch(new Map(), first.patch), next.patch))).toEqual({ 'todo/2': { text: 'Shared' } });
  });

  it('a large first pull, sent as it is read, arrives whole in the old shape', async () => {
    const { v2 } = contexts();
    const ids = Array.from({ length: 3_000 }, (_, i) => `t${String(i).padStart(5, '0')}`);
    await transact(v2, '', async (tx) => {
      for (const id of ids) await tx.set(`task/${id}`, { title: `Item ${id} ${'x'.repeat(200)}`, done: false, count: 0 });
    });
    const first = await pulled(v2, '1', 'g1', null);
    const view = applyPatch(new Map(), first.patch);
    expect(view.size).toBe(ids.length);
    expect(view.get('todo/t00042')).toEqual({ text: `Item t00042 ${'x'.repeat(200)}`, done: false, count: 0 });
    expect([...view.keys()].every((key) => key.startsWith('todo/'))).toBe(true);
  });
});

describe('the window', () => {
  it('a version not listed gets VersionNotSupported on pull and push, and nothing is written', async () => {
    const { v2, storage } = contexts();
    const push = await handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'addTodo', { id: 'z', title: 'no' })], { schemaVersion: '0' })), v2);
    expect(await push.json()).toEqual({ error: 'VersionNotSupported', versionType: 'schema' });
    expect(await pullAs(v2, '0', 'g0', null)).toEqual({ error: 'VersionNotSupported', versionType: 'schema' });
    expect((await inspect(createContext({ storage, mutators: {} }))).spaces).toEqual([]);
  });

  it('a closed version’s pulls get VersionNotSupported; its pushes (mutation recovery) are still applied', async () => {
    let now = 1_000;
    const storage = memoryStorage();
    const serving = (schema: SchemaOptions) => createContext({ storage, mutators: mutatorsV2 as unknown as Mutators, schema, clock: () => now });
    const open = serving(schemaV2);
    // Closed by a floor, from the deploy that sets it; or by a date, from then on.
    const closed = [serving({ ...schemaV2, minimum: '2' }), serving({ ...schemaV2, older: [{ ...schemaV2.older![0]!, closesAt: new Date(2_000) }] })];
    for (const [index, ctx] of closed.entries()) {
      now = 1_000;
      const group = `g${index}`;
      expect(await pullAs(open, '1', group, null)).toMatchObject({ cookie: expect.anything() });
      now = 2_000;
      expect(await pullAs(ctx, '1', group, null)).toEqual({ error: 'VersionNotSupported', versionType: 'schema' });
      expect(await pushAs(ctx, '1', group, [mutation(`${group}c`, 1, 'addTodo', { id: group, text: 'recovered' })])).toEqual({});
      expect(Object.fromEntries(applyPatch(new Map(), (await pulled(ctx, '2', 'reader', null)).patch))).toMatchObject({
        [`task/${group}`]: { title: 'recovered' },
      });
    }
  });

  it('inspect counts the recently active client groups by schema version', async () => {
    let now = 10 * 24 * 3_600_000;
    const { v2 } = contexts(memoryStorage(), { clock: () => now });
    await pushAs(v2, '1', 'old', [mutation('c1', 1, 'addTodo', { id: 'a', text: 'Milk' })]);
    await pushAs(v2, '2', 'new', [mutation('c2', 1, 'addTodo', { id: 'b', title: 'Eggs' })]);
    await pushAs(v2, '2', 'newer', [mutation('c3', 1, 'addTodo', { id: 'c', title: 'Tea' })]);
    expect((await inspect(v2)).spaces[0]!.schemaVersions).toEqual({ '1': 1, '2': 2 });
    expect((await inspect(v2, '')).groups.map(({ clientGroupID, schemaVersion }) => [clientGroupID, schemaVersion]).sort()).toEqual([
      ['new', '2'],
      ['newer', '2'],
      ['old', '1'],
    ]);
    // A week on, with only version 2 active: version 1's window can close.
    now += 8 * 24 * 3_600_000;
    await pushAs(v2, '2', 'new', [mutation('c2', 2, 'bump', { id: 'b', by: 1 })]);
    expect((await inspect(v2)).spaces[0]!.schemaVersions).toEqual({ '2': 1 });
  });

  it('createContext refuses a schema it cannot serve, naming the field', () => {
    const base = { storage: memoryStorage(), mutators: {} };
    expect(() => createContext({ ...base, schema: { current: '2' }, schemaVersion: '2' })).toThrow(/schema and schemaVersion were both given/);
    expect(() => createContext({ ...base, schema: { current: 2 } as never })).toThrow(/schema.current must be/);
    expect(() => createContext({ ...base, schema: { current: '2', older: [{ version: '2' }] } })).toThrow(/listed twice/);
    expect(() => createContext({ ...base, schema: { current: '2', minimum: '0' } })).toThrow(/schema.minimum must name/);
    expect(() => createContext({ ...base, schema: { current: '2', older: [{ version: '1', mutators: { a: 3 as never } }] } })).toThrow(
      /schema.older\[0\].mutators.a must be/,
    );
    expect(() => createContext({ ...base, schema: { current: '2', older: [{ version: '1', read: { key: () => [] } as never }] } })).toThrow(
      /read.key is not an option/,
    );
    expect(() => createContext({ ...base, schema: { current: '2', older: [{ version: '1', closesAt: 'soon' as never }] } })).toThrow(/closesAt must be a time/);
  });
});

describe('a deploy from version 1 to version 2', () => {
  it('version 1’s data, migrated, reads the same to version 1 clients before and after', async () => {
    const { v1, v2 } = contexts();
    await pushAs(v1, '1', 'g1', [mutation('c1', 1, 'addTodo', { id: 'a', text: 'Milk' }), mutation('c1', 2, 'bump', { id: 'a' })]);
    const before = await pulled(v1, '1', 'g1', null);
    await transact(v2, '', migrateV1Entries);
    const after = applyPatch(applyPatch(new Map(), before.patch), (await pulled(v2, '1', 'g1', before.cookie)).patch);
    expect(Object.fromEntries(after)).toEqual(Object.fromEntries(applyPatch(new Map(), before.patch)));
  });
});

describe('housekeeping', () => {
  it('removes kept rejected mutations older than retention.changesMs, and only those', async () => {
    let now = 1_000;
    const schema: SchemaOptions = { current: '2', older: [{ version: '1', mutators: { x: null } }] };
    const ctx = createContext({ storage: memoryStorage(), mutators: {}, schema, clock: () => now, retention: { changesMs: 10_000 }, onError: () => {} });
    await pushAs(ctx, '1', 'g1', [mutation('c1', 1, 'x')]);
    now = 6_000;
    await pushAs(ctx, '1', 'g1', [mutation('c1', 2, 'x')]);
    now = 12_000;
    await collectGarbage(ctx);
    expect((await inspect(ctx, '')).rejectedMutations.map(({ id }) => id)).toEqual([2]);
  });
});
