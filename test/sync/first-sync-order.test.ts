/**
 * A first sync in the order the app chose (`firstSync.order`): the keys of the prefixes it names
 * come first, in that order, the rest after in key order; every key once, only the view's; a
 * page's cookie carries the order, so an old page (key order) goes on as it began and a page of
 * another order starts over; a bad order is told to `onError` and the sync goes in key order.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  createContext,
  handlePull,
  handlePush,
  type JSONValue,
  memoryStorage,
  type Mutators,
  type Storage,
  type SyncContext,
  type SyncOptions,
} from '../../src/index.js';
import { compareUTF8 } from '../../src/base/utf8.js';
import { coversKey, Prefixes } from '../../src/sync/version/prefixes.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { resetRest, resumeAt } from '../../src/sync/version/reset-pages.js';
import { checkOrder } from '../../src/sync/first-sync-order.js';
import { DEFAULT_LIMITS } from '../../src/sync/transactions/limits.js';
import { applyPatch, mutation, post, pullBody, pushBody, type PullOK, testMutators } from '../support/helpers.js';

const mutators: Mutators = {
  ...testMutators,
  fill: async (tx, entries: Array<[string, JSONValue]>) => {
    for (const [key, value] of entries) await tx.set(key, value);
  },
};

async function fill(ctx: SyncContext, entries: Array<[string, JSONValue]>): Promise<void> {
  const response = await handlePush(post('/push', pushBody('filler', [mutation('filler-client', 1, 'fill', entries)])), ctx);
  expect(response.status, await response.text()).toBe(200);
}

/** The order's group of `key`: the first of `order`'s prefixes that covers it, else after them all. */
const groupOf = (order: readonly string[], key: string) => {
  const i = order.findIndex((prefix) => coversKey(prefix, key));
  return i < 0 ? order.length : i;
};

/**
 * Expects `keys` (as sent) to hold each key once, group by group in `order`, in key order within a
 * group; under a view, a reset's key order is the view's prefixes' (`a/a` of `a` before `a!`).
 */
function expectOrdered(keys: readonly string[], order: readonly string[], view?: Prefixes): void {
  expect(new Set(keys).size).toBe(keys.length);
  const rank = (key: string) => (view === undefined ? 0 : view.list.findIndex((prefix) => coversKey(prefix, key)));
  for (let i = 1; i < keys.length; i++) {
    const [a, b] = [keys[i - 1]!, keys[i]!];
    const [before, after] = [groupOf(order, a), groupOf(order, b)];
    expect(before <= after, `${a} (group ${before}) came before ${b} (group ${after})`).toBe(true);
    if (before === after) expect(rank(a) < rank(b) || (rank(a) === rank(b) && compareUTF8(a, b) < 0), `${a} before ${b}`).toBe(true);
  }
}

// Segments that sort around `/` (`!` before it, `0` just after) and an empty one (`a//b`, `a/`): the edges of the ranges.
const segment = fc.constantFrom('a', 'b', 'a!', 'ab', 'a0', 'c', '');
const path = fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
const prefix = fc
  .tuple(path, fc.boolean())
  .map(([p, slash]) => (slash ? `${p}/` : p))
  .filter((p) => p !== '');

/** The prefixes drawn, less those an order may not hold (covered by one before it). */
const validOrder = (drawn: readonly string[]) => drawn.filter((p, i) => !drawn.slice(0, i).some((before) => coversKey(before, p)));

describe('the ranges of a first sync in an order', () => {
  test('property: pages of any size, in any order, under any view, send every key of the view once, the order’s groups first and each in key order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(path, { minLength: 1, maxLength: 40 }),
        fc.array(prefix, { maxLength: 5 }).map(validOrder),
        fc.option(fc.array(prefix, { maxLength: 4 }), { nil: undefined }),
        fc.integer({ min: 40, max: 600 }),
        async (keys, order, viewPrefixes, pageChars) => {
          const storage = memoryStorage();
          const ctx = createContext({ storage, mutators });
          await fill(
            ctx,
            keys.map((key, i) => [key, 'x'.repeat(i % 7)]),
          );
          const view = viewPrefixes && Prefixes.canonical(viewPrefixes);
          const spaceKeys = new SpaceKeys('');
          const sent: string[] = [];
          // Each page from where the last page's cursor said, its ranges made again, as a page's cookie does.
          let at: ReturnType<typeof resumeAt> | undefined = resumeAt(spaceKeys, Number.MAX_SAFE_INTEGER, view, order, { range: 0, after: undefined });
          for (let pages = 0; at !== undefined; pages++) {
            expect(pages).toBeLessThan(10_000);
            let used = 0;
            const rest = resetRest(storage, '', spaceKeys, at, () => pageChars - used);
            let next = await rest.next();
            for (; next.done !== true; next = await rest.next()) {
              for (const op of next.value) {
                if (op.op !== 'put') throw new Error(`a reset sends puts, got ${op.op}`);
                sent.push(op.key);
                used += JSON.stringify(op).length;
              }
            }
            at = next.value && resumeAt(spaceKeys, Number.MAX_SAFE_INTEGER, view, order, next.value);
          }
          expectOrdered(sent, order, view);
          expect(new Set(sent)).toEqual(new Set(keys.filter((key) => view === undefined || view.covers(key))));
        },
      ),
      { numRuns: 300 },
    );
  }, 120_000);
});

const isPage = (cookie: JSONValue) => typeof cookie === 'object' && cookie !== null && 'page' in cookie;

async function pullPage(ctx: SyncContext, group: string, cookie: JSONValue, user = ''): Promise<PullOK> {
  const response = await handlePull(post('/pull', pullBody(group, cookie), { authorization: user }), ctx);
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(200);
  return JSON.parse(text) as PullOK;
}

/** Pulls pages from `cookie` until one is no page's: the keys put, in the order sent, and what the client then holds. */
async function syncInPages(ctx: SyncContext, group: string, { cookie = null as JSONValue, user = '', between = async (_page: number) => {} } = {}) {
  let held = new Map<string, JSONValue>();
  const keys: string[] = [];
  const pages: PullOK[] = [];
  for (;;) {
    const page = await pullPage(ctx, group, cookie, user);
    pages.push(page);
    held = applyPatch(held, page.patch);
    for (const op of page.patch) if (op.op === 'put') keys.push(op.key);
    cookie = page.cookie;
    if (!isPage(cookie)) return { held, keys, pages, cookie };
    await between(pages.length - 1);
  }
}

// A space shaped like an issue tracker's: the screen wants `issue/` first, which sorts after the rest.
const VALUE = 'v'.repeat(20_000);
const SPACE: Array<[string, JSONValue]> = [
  ...Array.from({ length: 60 }, (_, i) => [`comment/${String(i).padStart(3, '0')}`, VALUE] as [string, JSONValue]),
  ['control/version', 1],
  ...Array.from({ length: 60 }, (_, i) => [`description/${String(i).padStart(3, '0')}`, VALUE] as [string, JSONValue]),
  ...Array.from({ length: 60 }, (_, i) => [`issue/${String(i).padStart(3, '0')}`, { title: VALUE, team: i % 2 === 0 ? 'a' : 'b' }] as [string, JSONValue]),
  ['team/a/secret', 'a only'],
  ['team/b/secret', 'b only'],
];
const PAGE_BYTES = 2 ** 20;

async function seeded(options: Partial<SyncOptions> = {}, storage: Storage = memoryStorage()) {
  const errors: unknown[] = [];
  const ctx = createContext({
    storage,
    mutators,
    onError: (error) => errors.push(error),
    authenticate: (request) => request.headers.get('authorization') || 'anon',
    ...options,
  });
  return { ctx, errors, storage };
}

describe('a first sync in an order the app chose', () => {
  test('the prefixes named come first, in their order, and the rest after in key order; the last cookie holds the whole space', async () => {
    const { ctx } = await seeded({ firstSync: { pageBytes: PAGE_BYTES, order: ['issue/', 'control'] } });
    await fill(ctx, SPACE);
    const { held, keys, pages } = await syncInPages(ctx, 'ordered');
    expect(pages.length).toBeGreaterThan(2);
    expect(keys[0]).toBe('issue/000');
    // The first page holds issues only: the screen's data is there first.
    expect(pages[0]!.patch.filter((op) => op.op === 'put').every((op) => op.key.startsWith('issue/'))).toBe(true);
    expectOrdered(keys, ['issue/', 'control']);
    expect(held).toEqual(new Map(SPACE));
  });

  test('a function chooses per user; a prefix outside the user’s view sends nothing, and writes between pages still arrive', async () => {
    const asked: unknown[] = [];
    const view = (_tx: unknown, { userID }: { userID: string | undefined }) => ['issue/', 'comment/', `team/${userID}/`];
    const order = (request: { userID: string | undefined; view: readonly string[] | undefined }) => (
      asked.push(request), [`team/${request.userID}/`, 'team/b/', 'issue/', 'description/']
    );
    const { ctx } = await seeded({ view, firstSync: { pageBytes: PAGE_BYTES, order } });
    await fill(ctx, SPACE);
    let wrote = false;
    const { held, keys } = await syncInPages(ctx, 'user-a', {
      user: 'a',
      between: async () => {
        if (wrote) return;
        wrote = true;
        const response = await handlePush(
          post('/push', pushBody('writer', [mutation('writer-client', 1, 'put', { key: 'comment/000', value: 'changed' })]), { authorization: 'a' }),
          ctx,
        );
        expect(response.status).toBe(200);
      },
    });
    expect(wrote).toBe(true);
    expect(asked[0]).toMatchObject({ userID: 'a', clientGroupID: 'user-a', view: ['comment/', 'issue/', 'team/a/'] });
    expect(keys[0]).toBe('team/a/secret');
    expect(keys.some((key) => key.startsWith('team/b/') || key.startsWith('description/'))).toBe(false);
    // Written after the pages' start: sent at the end, with what changed meanwhile.
    expect(keys.at(-1)).toBe('comment/000');
    expectOrdered(keys.slice(0, -1), ['team/a/', 'issue/']);
    const expected = new Map(SPACE.filter(([key]) => /^(issue|comment)\/|^team\/a\//.test(key)));
    expected.set('comment/000', 'changed');
    expect(held).toEqual(expected);
  });

  test('pulls that share a read (shareReads) each get their own user’s order', async () => {
    const { ctx } = await seeded({ firstSync: { pageBytes: PAGE_BYTES, order: ({ userID }) => [userID === 'a' ? 'issue/' : 'description/'] } });
    await fill(ctx, SPACE);
    // The first runs alone; those that arrive while it runs share the next read.
    const [, a, b] = await Promise.all([pullPage(ctx, 'shared-c', null, 'c'), pullPage(ctx, 'shared-a', null, 'a'), pullPage(ctx, 'shared-b', null, 'b')]);
    expect(a.patch[1]).toMatchObject({ op: 'put', key: 'issue/000' });
    expect(b.patch[1]).toMatchObject({ op: 'put', key: 'description/000' });
  });

  test('a page of before orders (key order) goes on in key order after the app names one; a page of another order starts over', async () => {
    const storage = memoryStorage();
    const { ctx: keyOrder } = await seeded({ firstSync: { pageBytes: PAGE_BYTES } }, storage);
    await fill(keyOrder, SPACE);
    const old = await pullPage(keyOrder, 'deploy', null);
    expect(JSON.parse((old.cookie as { page: string }).page)).toHaveLength(3);
    const { ctx: ordered } = await seeded({ firstSync: { pageBytes: PAGE_BYTES, order: ['issue/'] } }, storage);
    const carried = await syncInPages(ordered, 'deploy', { cookie: old.cookie });
    expect(carried.pages[0]!.patch[0]).not.toEqual({ op: 'clear' });
    const keys = [...old.patch.flatMap((op) => (op.op === 'put' ? [op.key] : [])), ...carried.keys];
    expectOrdered(keys, []);
    expect(
      applyPatch(
        applyPatch(new Map(), old.patch),
        carried.pages.flatMap((page) => page.patch),
      ),
    ).toEqual(new Map(SPACE));

    const issuesFirst = await pullPage(ordered, 'reorder', null);
    expect(JSON.parse((issuesFirst.cookie as { page: string }).page)).toHaveLength(4);
    const { ctx: reordered } = await seeded({ firstSync: { pageBytes: PAGE_BYTES, order: ['description/'] } }, storage);
    const over = await syncInPages(reordered, 'reorder', { cookie: issuesFirst.cookie });
    expect(over.pages[0]!.patch[0]).toEqual({ op: 'clear' });
    expect(over.keys[0]).toBe('description/000');
    expect(over.held).toEqual(new Map(SPACE));
  });

  test('an order function that throws or gives junk is told to onError, and that sync goes in key order', async () => {
    for (const [bad, message] of [
      [
        () => {
          throw new Error('order broke');
        },
        /order broke/,
      ],
      [() => 'issue/', /must give an array of key prefixes, got string/],
      [async () => ['issue/'], /a promise \(it must not be async\)/],
      [() => ['issue/', 'issue/'], /gave "issue\/" at \[1\], twice/],
      [() => [7], /not a string at \[0\]: number/],
    ] as const) {
      const { ctx, errors } = await seeded({ firstSync: { pageBytes: PAGE_BYTES, order: bad as never } });
      await fill(ctx, SPACE);
      const { held, keys } = await syncInPages(ctx, 'bad');
      expect(String(errors[0])).toMatch(message);
      expect(keys[0]).toBe('comment/000');
      expectOrdered(keys, []);
      expect(held).toEqual(new Map(SPACE));
    }
  });

  test('a broken page cookie of an order gets a reset, never an error', async () => {
    const { ctx } = await seeded({ firstSync: { pageBytes: PAGE_BYTES, order: ['issue/'] } });
    await fill(ctx, SPACE);
    const first = await pullPage(ctx, 'forger', null);
    const cookie = first.cookie as { page: string };
    const [number, range, after] = JSON.parse(cookie.page) as [number, number, string];
    for (const page of [
      [number, range, after, 'short'],
      [number, range, after, 7],
      [number, range, after, 'x'.repeat(16), 'more'],
    ]) {
      const answer = await pullPage(ctx, 'forger', { ...cookie, page: JSON.stringify(page) });
      expect(answer.patch[0]).toEqual({ op: 'clear' });
    }
  });

  test('a list is checked when the context is made', () => {
    const storage = memoryStorage();
    const make = (order: unknown) => () => createContext({ storage, mutators, firstSync: { order: order as never } });
    expect(make('issue/')).toThrow(/firstSync.order must give an array of key prefixes, got string/);
    expect(make(['issue/', 3])).toThrow(/firstSync.order gave a prefix that is not a string at \[1\]: number/);
    expect(make([''])).toThrow(/gave '' at \[0\], which covers every key/);
    expect(make(['issue/', 'issue/'])).toThrow(/gave "issue\/" at \[1\], twice/);
    expect(make(['issue', 'issue/7'])).toThrow(/gave "issue\/7" at \[1\], after "issue", which covers it: each prefix once, the narrower first/);
    expect(make(['\ud800'])).toThrow(/lone surrogate/);
    expect(make(['k'.repeat(2_000)])).toThrow(/longer than a key may be/);
    expect(make(Array.from({ length: 101 }, (_, i) => `p${i}`))).toThrow(/gave 101 prefixes, more than 100: name what the first screen needs/);
    expect(make(Array.from({ length: 100 }, (_, i) => `p${i}`))).not.toThrow();
    // Narrower first, then wider: the wider sends what is left of it.
    expect(make(['issue/7', 'issue/', 'comment'])).not.toThrow();
    expect(() => checkOrder(['a/b/', 'a/'], 'order', DEFAULT_LIMITS)).not.toThrow();
  });
});
