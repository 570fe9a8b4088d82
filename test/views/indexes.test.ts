/**
 * Indexes the server keeps for views (`indexes`): an app whose todos are flat (`todo/<id>`, the
 * list in the value) finds a list's todos with `tx.scan({indexName, prefix})`, as its client does,
 * with no index entries kept by hand. Rules by hand on the memory store, then a model-based
 * property on every store.
 */
import * as fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import {
  createContext,
  handlePull,
  handlePush,
  handleRequest,
  type JSONValue,
  memoryStorage,
  type Storage,
  type SyncContext,
  type View,
} from '../../src/index.js';
import { read } from '../../src/backend.js';
import { moveSpace } from '../../src/ops.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import type { IndexDefinitions } from '../../src/sync/version/indexes.js';
import { routedStorage } from '../../src/route/routed-storage.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { applyPatch, mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';
import { EventReader } from '../poke/sse.js';

const indexes: IndexDefinitions = { byList: { prefix: 'todo/', jsonPointer: '/listID' } };

/** A user reads their own list, the lists `share/<user>` names, and the todos of those lists. */
const view: View = async (tx, { userID }) => {
  const lists = [userID!, ...(((await tx.get(`share/${userID}`)) ?? []) as string[])];
  const keys = [`share/${userID}`];
  for (const list of lists) {
    keys.push(`list/${list}`);
    for await (const [secondary, key] of tx.scan({ indexName: 'byList', prefix: list }).keys()) if (secondary === list) keys.push(key);
  }
  return keys;
};

function app(storage: Storage = memoryStorage(), options: Partial<Parameters<typeof createContext>[0]> = {}): SyncContext {
  return createContext({
    storage,
    mutators: { ...testMutators, scanByIndex: async (tx) => void (await tx.scan({ indexName: 'byList' }).toArray()) },
    view,
    indexes,
    authenticate: (request) => request.headers.get('authorization') || null,
    pokes: { coalesceMs: 0 },
    onError: () => {},
    ...options,
  });
}

let writes = 0;
async function write(ctx: SyncContext, entries: Record<string, JSONValue | undefined>): Promise<void> {
  const id = ++writes;
  const mutations = Object.entries(entries).map(([key, value], i) =>
    mutation(`admin-${id}`, i + 1, value === undefined ? 'del' : 'put', value === undefined ? { key } : { key, value }),
  );
  const response = await handlePush(post('/push', pushBody(`admin-g-${id}`, mutations), { authorization: 'admin' }), ctx);
  expect(response.status).toBe(200);
}

class Client {
  cookie: JSONValue = null;
  data = new Map<string, JSONValue>();
  constructor(
    readonly ctx: SyncContext,
    readonly user: string,
  ) {}
  async pull(ctx = this.ctx): Promise<Record<string, JSONValue>> {
    const response = await handlePull(post('/pull', pullBody(`${this.user}-g`, this.cookie), { authorization: this.user }), ctx);
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const body = JSON.parse(text) as { cookie: JSONValue; patch: never };
    this.data = applyPatch(this.data, body.patch);
    this.cookie = body.cookie;
    return Object.fromEntries([...this.data].sort(([a], [b]) => (a < b ? -1 : 1)));
  }
}

const rows = (storage: Storage) => storage.transaction(async (tx) => (await tx.scan({ prefix: 'n/' })).map(([row]) => row), { readOnly: true });

describe('indexes for views', () => {
  it('a view finds flat todos by their list: each user gets their lists’ todos, and a todo moved to another list moves between users', async () => {
    const ctx = app();
    await write(ctx, {
      'list/a': 'A',
      'list/b': 'B',
      'todo/1': { listID: 'a', title: 'milk' },
      'todo/2': { listID: 'b', title: 'bread' },
      'todo/3': { listID: 'ab', title: 'not a' },
    });
    const a = new Client(ctx, 'a');
    const b = new Client(ctx, 'b');
    expect(await a.pull()).toEqual({ 'list/a': 'A', 'todo/1': { listID: 'a', title: 'milk' } });
    expect(await b.pull()).toEqual({ 'list/b': 'B', 'todo/2': { listID: 'b', title: 'bread' } });
    await write(ctx, { 'todo/1': { listID: 'b', title: 'milk' } });
    expect(await a.pull()).toEqual({ 'list/a': 'A' });
    expect(await b.pull()).toEqual({ 'list/b': 'B', 'todo/1': { listID: 'b', title: 'milk' }, 'todo/2': { listID: 'b', title: 'bread' } });
    await write(ctx, { 'todo/2': undefined, 'share/a': ['b'] });
    expect(await a.pull()).toEqual({ 'list/a': 'A', 'list/b': 'B', 'share/a': ['b'], 'todo/1': { listID: 'b', title: 'milk' } });
    // One row per indexed todo, kept by every write.
    expect(await rows(ctx.options.storage)).toEqual(['n//byList/ab\u0000todo/3', 'n//byList/b\u0000todo/1']);
  });

  it.each(['its rows', 'the entries (no write since it was defined)'])(
    'an index scan reads as the client’s does, from %s: [secondary, key] in order, values, a prefix of secondary keys, start and limit; the backend’s read has it too',
    async (from) => {
      const storage = memoryStorage();
      const ctx = app(storage);
      await write(from === 'its rows' ? ctx : app(storage, { indexes: undefined }), {
        'todo/1': { listID: 'b' },
        'todo/2': { listID: 'a' },
        'todo/3': { listID: 'b' },
        'todo/4': { listID: 'ab' },
      });
      expect((await rows(storage)).length).toBe(from === 'its rows' ? 4 : 0);
      const scan = (options: object) =>
        read(ctx, '', (tx) =>
          tx
            .scan({ indexName: 'byList', ...options })
            .entries()
            .toArray(),
        );
      const entry = (list: string, id: number) => [[list, `todo/${id}`], { listID: list }];
      expect(await scan({})).toEqual([entry('a', 2), entry('ab', 4), entry('b', 1), entry('b', 3)]);
      expect(await scan({ prefix: 'a' })).toEqual([entry('a', 2), entry('ab', 4)]);
      expect(await scan({ start: { key: ['b', 'todo/1'], exclusive: true } })).toEqual([entry('b', 3)]);
      expect(await scan({ start: { key: 'ab' }, limit: 2 })).toEqual([entry('ab', 4), entry('b', 1)]);
      expect(await read(ctx, '', (tx) => tx.scan({ indexName: 'byList', prefix: 'b' }).keys().toArray())).toEqual([
        ['b', 'todo/1'],
        ['b', 'todo/3'],
      ]);
    },
  );

  it('an index added to a space with data is read from the entries until the next write, which builds its rows', async () => {
    const storage = memoryStorage();
    const before = app(storage, { indexes: undefined, view: undefined });
    await write(before, { 'todo/1': { listID: 'a' }, 'todo/2': { listID: 'b' } });
    const ctx = app(storage);
    const a = new Client(ctx, 'a');
    expect(await a.pull()).toEqual({ 'todo/1': { listID: 'a' } });
    expect(await rows(storage)).toEqual([]);
    await write(ctx, { 'todo/3': { listID: 'a' } });
    expect(await rows(storage)).toEqual(['n//byList/a\u0000todo/1', 'n//byList/a\u0000todo/3', 'n//byList/b\u0000todo/2']);
    expect(await a.pull()).toEqual({ 'todo/1': { listID: 'a' }, 'todo/3': { listID: 'a' } });
  });

  it('a changed definition, or a write by a context that did not keep the index (an older instance), rebuilds it at the next write that does', async () => {
    const storage = memoryStorage();
    const ctx = app(storage);
    await write(ctx, { 'todo/1': { listID: 'a', owner: 'x' } });
    // Another instance, without the index: its write leaves the rows behind.
    await write(app(storage, { indexes: undefined }), { 'todo/1': { listID: 'b', owner: 'x' }, 'todo/2': { listID: 'a', owner: 'y' } });
    expect(await rows(storage)).toEqual(['n//byList/a\u0000todo/1']);
    const a = new Client(ctx, 'a');
    expect(await a.pull()).toEqual({ 'todo/2': { listID: 'a', owner: 'y' } });
    await write(ctx, { 'list/a': 'A' });
    expect(await rows(storage)).toEqual(['n//byList/a\u0000todo/2', 'n//byList/b\u0000todo/1']);
    // Now by owner, under the same name.
    const byOwner = app(storage, { indexes: { byList: { prefix: 'todo/', jsonPointer: '/owner' } } });
    await write(byOwner, { 'list/b': 'B' });
    expect(await rows(storage)).toEqual(['n//byList/x\u0000todo/1', 'n//byList/y\u0000todo/2']);
  });

  it('a write by viewsync 0.1 (which keeps the meta fields it does not know, and no index rows) leaves indexesAt behind: the rows are not believed, and the next write rebuilds them', async () => {
    const storage = memoryStorage();
    const ctx = app(storage);
    await write(ctx, { 'todo/1': { listID: 'a' } });
    const a = new Client(ctx, 'a');
    await a.pull();
    await storage.transaction(
      async (tx) => {
        const meta = (await tx.get('m/')) as { version: number };
        const version = meta.version + 1;
        const field = version.toString(16).padStart(14, '0');
        for (const [row] of await tx.scan({ prefix: 'v//' })) await tx.del(row);
        await tx.put(`v//${field}/todo/1`, null);
        await tx.put('e//todo/1', { ver: version, val: { listID: 'b' } });
        await tx.put('m/', { ...meta, version });
      },
      { readOnly: false },
    );
    expect(await a.pull()).toEqual({});
    await write(ctx, { 'list/a': 'A' });
    expect(await rows(storage)).toEqual(['n//byList/b\u0000todo/1']);
  });

  it('a move copies the index with the space: the target’s rows are whole and believed', async () => {
    const members = { x: memoryStorage(), y: memoryStorage() };
    const ctx = app(routedStorage({ stores: members, place: () => 'x' }));
    await write(ctx, { 'todo/1': { listID: 'a' }, 'todo/2': { listID: 'b' } });
    await moveSpace(ctx, '', 'y');
    expect(await rows(members.y)).toEqual(['n//byList/a\u0000todo/1', 'n//byList/b\u0000todo/2']);
    expect(await new Client(ctx, 'a').pull()).toEqual({ 'todo/1': { listID: 'a' } });
    await write(ctx, { 'todo/2': { listID: 'a' } });
    expect(await rows(members.y)).toEqual(['n//byList/a\u0000todo/1', 'n//byList/a\u0000todo/2']);
  });

  it('entries whose pointer names no string (or a string with U+0000) are left out; the pointer follows RFC 6901', async () => {
    const storage = memoryStorage();
    const ctx = app(storage, { indexes: { byList: { prefix: 'todo/', jsonPointer: '/meta/list~1id' }, all: { jsonPointer: '' } } });
    await write(ctx, {
      'todo/1': { meta: { 'list/id': 'a' } },
      'todo/2': { meta: { 'list/id': 7 } },
      'todo/3': { meta: {} },
      'todo/4': { meta: { 'list/id': 'a\u0000b' } },
      'todo/5': 'x',
      other: 'y',
    });
    expect(await rows(storage)).toEqual(['n//all/x\u0000todo/5', 'n//all/y\u0000other', 'n//byList/a\u0000todo/1']);
  });

  it('a mutator that scans an index fails with a clear error (its own writes would not be in it); the push goes on', async () => {
    const errors: unknown[] = [];
    const ctx = app(memoryStorage(), { onError: (error) => void errors.push(error) });
    const response = await handlePush(
      post('/push', pushBody('g', [mutation('c', 1, 'scanByIndex', {}), mutation('c', 2, 'put', { key: 'k', value: 1 })]), { authorization: 'a' }),
      ctx,
    );
    expect(response.status).toBe(200);
    expect(String(errors[0])).toMatch(/on the server, views read them \(the context's `indexes`\), and a mutator scans by key prefix/);
  });

  it('a view scanning an index the context lacks fails the pull as a bug of the app, naming the indexes there are', async () => {
    const errors: unknown[] = [];
    const ctx = app(memoryStorage(), { view: async (tx) => (await tx.scan({ indexName: 'nope' }).toArray(), []), onError: (error) => void errors.push(error) });
    await write(ctx, { k: 1 });
    const response = await handlePull(post('/pull', pullBody('g', null), { authorization: 'a' }), ctx);
    expect(response.status).toBe(500);
    expect(String(errors[0])).toMatch(/no index is named "nope" \(indexes: "byList"\)/);
  });

  it.each([
    [{ byList: { jsonPointer: 'listID' } }, /indexes\["byList"\]\.jsonPointer must be a JSON Pointer/],
    [{ byList: { jsonPointer: '/a', sort: true } }, /indexes\["byList"\]\.sort is not an option of an index/],
    [{ byList: { prefix: 1, jsonPointer: '/a' } }, /indexes\["byList"\]\.prefix must be a string/],
    [[], /indexes must be an object of index definitions by name, got an array/],
  ])('the context refuses a definition the client would not take: %j', (bad, message) => {
    expect(() => app(memoryStorage(), { indexes: bad as never })).toThrow(message);
  });

  it('a todo added to a list a user reads pokes that user’s stream (the view read the index there), not another’s', async () => {
    const ctx = app();
    await write(ctx, { 'todo/1': { listID: 'a' }, 'todo/2': { listID: 'b' } });
    const streams: Record<string, EventReader> = {};
    for (const user of ['a', 'b']) {
      const response = await handlePull(post('/pull', pullBody(`${user}-g`, null), { authorization: user }), ctx);
      expect(response.status).toBe(200);
      const stream = await handleRequest(new Request(`http://localhost/poke?clientGroupID=${user}-g`, { headers: { authorization: user } }), ctx);
      streams[user] = new EventReader(stream.body!);
      await streams[user]!.until(() => streams[user]!.otherMessages.length > 0);
    }
    // Pulls again now that the streams are open, so the hub knows what each depends on.
    for (const user of ['a', 'b']) await handlePull(post('/pull', pullBody(`${user}-g`, null), { authorization: user }), ctx);
    await write(ctx, { 'todo/3': { listID: 'a' } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(ctx, { 'todo/4': { listID: 'a' }, 'todo/5': { listID: 'b' } });
    await streams.b!.until(() => streams.b!.pokes === 1);
    await streams.a!.until(() => streams.a!.pokes === 2);
    expect([streams.a!.pokes, streams.b!.pokes]).toEqual([2, 1]);
    for (const stream of Object.values(streams)) await stream.cancel();
  });
});

/** A user reads their own list's todos as the docs write it: from `[list]`, up to the first todo of another list. */
const fromStart: View = async (tx, { userID }) => {
  const keys: string[] = [];
  for await (const [listID, key] of tx.scan({ indexName: 'byList', start: { key: [userID!] } }).keys()) {
    if (listID !== userID) break;
    keys.push(key);
  }
  return keys;
};

describe('pokes of a view that reads an index from a list’s first todo and stops at the next list’s', () => {
  it('a change in a list past what it was handed does not poke it; a new todo in its own list (empty before) does', async () => {
    const ctx = app(memoryStorage(), { view: fromStart });
    // More of list b than a page of the index holds: the view is handed b's rows only, not c's.
    await write(ctx, { ...Object.fromEntries(Array.from({ length: 130 }, (_, i) => [`todo/b${i}`, { listID: 'b' }])), 'todo/2': { listID: 'c' } });
    await handlePull(post('/pull', pullBody('a-g', null), { authorization: 'a' }), ctx);
    const response = await handleRequest(new Request('http://localhost/poke?clientGroupID=a-g', { headers: { authorization: 'a' } }), ctx);
    const stream = new EventReader(response.body!);
    await stream.until(() => stream.otherMessages.length > 0);
    await handlePull(post('/pull', pullBody('a-g', null), { authorization: 'a' }), ctx);
    // Its view read list a's place in the index and the page after it (list b's rows): no further.
    await write(ctx, { 'todo/3': { listID: 'c' } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(ctx, { 'todo/4': { listID: 'a' } });
    await stream.until(() => stream.pokes === 1);
    await handlePull(post('/pull', pullBody('a-g', null), { authorization: 'a' }), ctx);
    await write(ctx, { 'todo/5': { listID: 'd' } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(ctx, { 'todo/4': { listID: 'a', done: true } });
    await stream.until(() => stream.pokes === 2);
    expect(stream.pokes).toBe(2);
    await stream.cancel();
  });
});

describe('property: pages that pull only when poked, under a view through an index, always hold their view', () => {
  const USERS = ['a', 'b', 'c'];
  const step = fc.record({ id: fc.nat({ max: 200 }), list: fc.option(fc.nat({ max: 3 }), { freq: 5 }) });

  it('holds for random todos put, moved between lists and deleted (lists of more than a page among them)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 20 }), async (steps) => {
        const ctx = app(memoryStorage(), { view: fromStart });
        const model = new Map<string, JSONValue>();
        // List b starts with more todos than a page of the index: the view of a is handed part of it.
        const seed = Object.fromEntries(Array.from({ length: 140 }, (_, i) => [`todo/${i}`, { listID: 'b' }]));
        await write(ctx, seed);
        for (const [key, value] of Object.entries(seed)) model.set(key, value);
        const pages = USERS.map((user) => new Client(ctx, user));
        const streams: EventReader[] = [];
        for (const page of pages) {
          const response = await handleRequest(
            new Request(`http://localhost/poke?clientGroupID=${page.user}-g`, { headers: { authorization: page.user } }),
            ctx,
          );
          const stream = new EventReader(response.body!);
          await stream.until(() => stream.otherMessages.length > 0);
          streams.push(stream);
          await page.pull();
        }
        for (const { id, list } of steps) {
          const seen = streams.map((stream) => stream.pokes);
          const value = list === null ? undefined : { listID: ['a', 'b', 'c', 'd'][list]! };
          await write(ctx, { [`todo/${id}`]: value });
          if (value === undefined) model.delete(`todo/${id}`);
          else model.set(`todo/${id}`, value);
          await new Promise((resolve) => setTimeout(resolve, 5));
          for (const [i, page] of pages.entries()) {
            if (streams[i]!.pokes > seen[i]!) await page.pull();
            const expected = Object.fromEntries(
              [...model].filter(([, v]) => (v as { listID: string }).listID === page.user).sort(([x], [y]) => (x < y ? -1 : 1)),
            );
            expect(Object.fromEntries([...page.data].sort(([x], [y]) => (x < y ? -1 : 1))), `${page.user} after todo/${id} → ${JSON.stringify(value)}`).toEqual(
              expected,
            );
          }
        }
        for (const stream of streams) await stream.cancel();
      }),
      { numRuns: Math.ceil(Number(process.env.FC_RUNS ?? 100) / 4) },
    );
  });
});

describe('model-based: views through an index', () => {
  const USERS = ['a', 'b', 'c'];
  type Step =
    | { kind: 'todo'; id: number; list: number | null }
    | { kind: 'share'; user: number; lists: number[] }
    | { kind: 'pull'; user: number }
    | { kind: 'unkept'; id: number; list: number };
  const stepArb: fc.Arbitrary<Step> = fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('todo' as const), id: fc.nat({ max: 5 }), list: fc.option(fc.nat({ max: 2 }), { freq: 4 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('share' as const), user: fc.nat({ max: 2 }), lists: fc.subarray([0, 1, 2]) }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('pull' as const), user: fc.nat({ max: 2 }) }) },
    // A write by an instance that does not keep the index.
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('unkept' as const), id: fc.nat({ max: 5 }), list: fc.nat({ max: 2 }) }) },
  );
  const RUNS = Number(process.env.FC_RUNS ?? 200);

  async function run(steps: Step[], storage: Storage): Promise<void> {
    const ctx = app(storage);
    const unkept = app(storage, { indexes: undefined });
    const model = new Map<string, JSONValue>();
    const clients = USERS.map((user) => new Client(ctx, user));
    for (const step of steps) {
      if (step.kind === 'todo' || step.kind === 'unkept') {
        const key = `todo/${step.id}`;
        const value = step.list === null ? undefined : { listID: USERS[step.list]! };
        await write(step.kind === 'unkept' ? unkept : ctx, { [key]: value });
        if (value === undefined) model.delete(key);
        else model.set(key, value);
      } else if (step.kind === 'share') {
        const value = step.lists.map((n) => USERS[n]!);
        await write(ctx, { [`share/${USERS[step.user]}`]: value });
        model.set(`share/${USERS[step.user]}`, value);
      } else {
        const client = clients[step.user]!;
        const data = await client.pull();
        const lists = [client.user, ...((model.get(`share/${client.user}`) ?? []) as string[])];
        const expected = Object.fromEntries(
          [...model]
            .filter(([key, value]) => key === `share/${client.user}` || (key.startsWith('todo/') && lists.includes((value as { listID: string }).listID)))
            .sort(([x], [y]) => (x < y ? -1 : 1)),
        );
        expect(data).toEqual(expected);
      }
    }
  }

  it('on the memory store: every pull brings its client exactly to the todos of its lists', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { maxLength: 30 }), (steps) => run(steps, memoryStorage())),
      { numRuns: RUNS },
    );
  });

  it('on SQLite', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { maxLength: 30 }), (steps) => run(steps, sqliteStorage(openSQLite()))),
      { numRuns: Math.ceil(RUNS / 4) },
    );
  });

  const url = process.env.DATABASE_URL;
  const server = url === undefined ? undefined : postgres(url, { onnotice: () => {}, max: 4 });
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await server?.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await server?.end();
  });
  it.skipIf(server === undefined)('on PostgreSQL (a real server)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { maxLength: 20 }), async (steps) => {
        const schema = `indexes_${process.pid}_${schemas.length}`;
        schemas.push(schema);
        await run(steps, postgresStorage(server!, { schema }));
      }),
      { numRuns: process.env.VIEWSYNC_FAST ? 5 : 20 },
    );
  });
});
