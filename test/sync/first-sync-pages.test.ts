/**
 * A first sync in pages (`firstSync`): the first pull of a big space answered a page at a time,
 * each with a cookie that says where the next starts and a poke to the pulling group. On every
 * store: pages stay near their size, their orders rise, pulled one after another they end in the
 * space as of the last cookie whatever was written meanwhile, any pull of a page's cookie (a second
 * tab, a retry) carries on from it, and a page that can no longer carry on starts over above it.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, test } from 'vitest';
import { createContext, handlePull, type JSONValue, type Storage, type SyncContext } from '../../src/index.js';
import { compareCookies } from '../../src/sync/version/cookie.js';
import { applyPatch, mutation, post, pullBody, pullBodyV0, push, type PullOK } from '../support/helpers.js';
import { bigSpace } from '../support/big-space.js';
import { onEveryStore } from '../support/stores.js';

const ENTRIES = 20_000;
const PAGE_BYTES = 2 ** 20;
const { keyOf, valueFor, mutators, writer } = bigSpace(200);

interface Page extends PullOK {
  bytes: number;
}

async function pullPage(ctx: SyncContext, group: string, cookie: JSONValue): Promise<Page> {
  const response = await handlePull(post('/pull', pullBody(group, cookie)), ctx);
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(200);
  return { ...(JSON.parse(text) as PullOK), bytes: text.length };
}

const isPage = (cookie: JSONValue) => typeof cookie === 'object' && cookie !== null && 'page' in cookie;

/** Pulls page after page from `cookie` until a cookie that is not a page's, applying each to `held`; `between` runs after each page. */
async function syncInPages(ctx: SyncContext, group: string, between: (page: number) => Promise<void> = async () => {}) {
  let held = new Map<string, JSONValue>();
  let cookie: JSONValue = null;
  const pages: Page[] = [];
  const lmids: Record<string, number> = {};
  for (;;) {
    const page = await pullPage(ctx, group, cookie);
    expect(compareCookies(page.cookie, cookie)).toBeGreaterThan(0);
    pages.push(page);
    held = applyPatch(held, page.patch);
    Object.assign(lmids, page.lastMutationIDChanges);
    cookie = page.cookie;
    if (!isPage(cookie)) return { held, pages, cookie, lmids };
    await between(pages.length - 1);
  }
}

onEveryStore('first_sync_pages', (store, create) => {
  describe(`a first sync in pages (${store})`, () => {
    const storage: Storage = create();
    const ctx = createContext({ storage, mutators, firstSync: { pageBytes: PAGE_BYTES } });
    const expected = new Map(Array.from({ length: ENTRIES }, (_, i) => [keyOf(i), valueFor(i)] as const));
    let runs = 0;

    beforeAll(async () => {
      const mutations = [];
      for (let from = 0, id = 1; from < ENTRIES; from += 5_000, id++) mutations.push(mutation('filler', id, 'fill', { from, count: 5_000 }));
      await push(ctx, 'filler-group', mutations);
    }, 120_000);

    test('pages of about pageBytes, rising orders, a clear first, and the whole space at the last cookie', async () => {
      const { held, pages, cookie } = await syncInPages(ctx, 'pager');
      expect(pages.length).toBeGreaterThan(3);
      expect(pages[0]!.patch[0]).toEqual({ op: 'clear' });
      expect(pages.slice(1).every((page) => page.patch.every((op) => op.op !== 'clear'))).toBe(true);
      // Each page is its size, give or take a row and the answer's cookie and lastMutationIDs.
      for (const page of pages.slice(0, -1)) expect(Math.abs(page.bytes - PAGE_BYTES)).toBeLessThan(8_192);
      expect(held).toEqual(expected);
      expect(pages.at(-1)!.lastMutationIDChanges).toEqual({});
      const again = await pullPage(ctx, 'pager', cookie);
      expect(again.patch).toEqual([]);
    }, 60_000);

    test('a page’s cookie pulled again (a retry, a second tab) answers the same next page', async () => {
      const first = await pullPage(ctx, 'tab-1', null);
      const a = await pullPage(ctx, 'tab-1', first.cookie);
      const b = await pullPage(ctx, 'tab-2', first.cookie);
      expect(b.patch).toEqual(a.patch);
      expect(b.cookie).toEqual(a.cookie);
    }, 60_000);

    test('property: writes between pages end in the last page, with the writer’s lastMutationIDs, and nothing else', async () => {
      const drawn = fc.record({ at: fc.nat({ max: 8 }), entry: fc.nat({ max: ENTRIES + 50 }), op: fc.constantFrom<'put' | 'del'>('put', 'put', 'del') });
      await fc.assert(
        fc.asyncProperty(fc.array(drawn, { minLength: 1, maxLength: 10 }), async (writes) => {
          const run = ++runs;
          const group = `paged-${run}`;
          const client = `paged-client-${run}`;
          const write = writer(ctx, group, client, expected, run);
          let made = 0;
          const { held, lmids, cookie } = await syncInPages(ctx, group, async (page) => {
            made = await write(writes, page);
          });
          expect(held).toEqual(expected);
          expect(lmids).toEqual(made === 0 ? {} : { [client]: made });
          expect((await pullPage(ctx, group, cookie)).patch).toEqual([]);
        }),
        { numRuns: 5 },
      );
    }, 240_000);

    test('a forged or broken page cookie gets a reset above it, never an error', async () => {
      const first = await pullPage(ctx, 'forger', null);
      const cookie = first.cookie as { order: number; epoch: string; page: string };
      for (const page of ['nonsense', '[1,2]', JSON.stringify([-1, 0, null]), JSON.stringify([3, 0, 7]), 'x'.repeat(20_000)]) {
        const response = await handlePull(post('/pull', pullBody('forger', { ...cookie, page })), ctx);
        expect(response.status).toBe(200);
        const answer = JSON.parse(await response.text()) as PullOK;
        // A cookie this server never wrote: everything, from a clear.
        expect(answer.patch[0]).toEqual({ op: 'clear' });
      }
      // A cursor past the end: the end of the space, then what changed since the start.
      const past = await pullPage(ctx, 'forger', { ...cookie, page: JSON.stringify([0, 5, null]) });
      expect(isPage(past.cookie)).toBe(false);
    }, 60_000);

    test('a pull of version 0 is never paged', async () => {
      const response = await handlePull(post('/pull', pullBodyV0('old-client', null, 0)), ctx);
      const answer = JSON.parse(await response.text()) as { cookie: JSONValue; patch: PullOK['patch'] };
      expect(isPage(answer.cookie)).toBe(false);
      expect(applyPatch(new Map(), answer.patch)).toEqual(expected);
    }, 60_000);
  });
});

describe('firstSync options', () => {
  test('are checked when the context is made', () => {
    const storage = { transaction: async () => undefined } as unknown as Storage;
    expect(() => createContext({ storage, mutators, firstSync: { pageBytes: 1000 } })).toThrow(/firstSync.pageBytes must be a whole number of at least 1 MiB/);
    expect(() => createContext({ storage, mutators, firstSync: { pageSize: 1 } as never })).toThrow(/pageSize is not an option of firstSync/);
    expect(() => createContext({ storage, mutators, firstSync: {}, pokes: false })).toThrow(/firstSync needs pokes/);
  });
});
