/**
 * What the inspector's API reads: spaces a page at a time from their records, a space's keys now
 * and as of a version, a key's history, a user's view (exactly the keys that user's pull gets,
 * checked against real pulls), the live numbers and the feed's tail.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handleRequest, memoryStorage } from '../../src/index.js';
import { inspect } from '../../src/ops.js';
import { inspectorApp, pushAs, SECRET } from './app.js';
import type { FeedTail, KeysPage, KeyPage, LivePage, SpacePage, SpacesPage, ViewAsPage } from '../../src/inspector/api-types.js';

const RUNS = Number(process.env.FC_RUNS ?? 100);
const ORIGIN = 'http://inspect.test';

/** The test app on a memory store, logged in: `api(path)` reads the API. */
async function app() {
  const ctx = inspectorApp(memoryStorage(), {
    onError: (error) => {
      throw error;
    },
  });
  const handle = (request: Request) => handleRequest(request, ctx);
  const login = await handle(
    new Request(`${ORIGIN}/_inspect/login`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: `secret=${SECRET}`,
    }),
  );
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const api = async <T>(path: string): Promise<T> => {
    const response = await handle(new Request(`${ORIGIN}/_inspect/api/${path}`, { headers: { cookie, 'x-viewsync-inspector': '1' } }));
    const body = await response.json();
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
    return body as T;
  };
  return { ctx, handle, api };
}

describe('the spaces list', () => {
  it('pages through every space once, in order, from their records, with a prefix', async () => {
    const { ctx, handle, api } = await app();
    const names = Array.from({ length: 23 }, (_, i) => (i % 3 === 0 ? `team/${i}` : `s-${String(i).padStart(2, '0')}`));
    names.push('with/slash%and-percent');
    for (const name of names) await pushAs(handle, name, 'ann', [{ name: 'put', args: { key: 'k', value: name } }]);
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await api<SpacesPage>(`spaces?limit=5${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`);
      seen.push(...page.spaces.map(({ space }) => space));
      if ((after = page.next) === undefined) break;
    }
    expect(seen.toSorted()).toEqual(names.toSorted());
    expect(new Set(seen).size).toBe(seen.length);
    const team = await api<SpacesPage>(`spaces?prefix=team/`);
    expect(team.spaces.map(({ space }) => space).toSorted()).toEqual(names.filter((name) => name.startsWith('team/')).toSorted());
    // What a row says is what a survey counts.
    const { spaces } = await inspect(ctx);
    for (const row of (await api<SpacesPage>('spaces?limit=100')).spaces) {
      const counted = spaces.find(({ space }) => space === row.space)!;
      expect(row).toMatchObject({ version: counted.version, entries: counted.entries, bytes: counted.bytes, activity: { pushes: 1, pulls: 0 } });
    }
  });
});

describe('the key browser', () => {
  it("pages through a space's keys now, and as of a version kept in history", async () => {
    const { handle, api } = await app();
    await pushAs(
      handle,
      'acme',
      'ann',
      Array.from({ length: 12 }, (_, i) => ({
        name: 'put' as const,
        args: { key: `k/${String(i).padStart(2, '0')}`, value: { i, text: 'x'.repeat(i === 3 ? 2000 : 1) } },
      })),
    );
    await pushAs(handle, 'acme', 'ann', [
      { name: 'put', args: { key: 'k/00', value: 'changed' } },
      { name: 'del', args: { key: 'k/01' } },
    ]);
    const first = await api<KeysPage>('keys?space=acme&prefix=k/&limit=5');
    expect(first.version).toBe(2);
    expect(first.entries.map(({ key }) => key)).toEqual(['k/00', 'k/02', 'k/03', 'k/04', 'k/05']);
    expect(first.entries[0]!.json).toBe('"changed"');
    expect(first.entries[2]).toMatchObject({ cut: true, bytes: expect.any(Number) });
    expect(first.entries[2]!.json.length).toBe(1000);
    const second = await api<KeysPage>(`keys?space=acme&prefix=k/&limit=5&after=${first.next}`);
    expect(second.entries[0]!.key).toBe('k/06');
    const then = await api<KeysPage>('keys?space=acme&prefix=k/&limit=2&version=1');
    expect(then).toMatchObject({ version: 1, entries: [{ key: 'k/00', json: '{"i":0,"text":"x"}' }, { key: 'k/01' }] });
  });

  it("shows a key's value and its history, or why there is none", async () => {
    const { handle, api } = await app();
    await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: 'a', value: 1 } }]);
    await pushAs(handle, 'acme', 'bob', [{ name: 'put', args: { key: 'a', value: 2 } }]);
    const page = await api<KeyPage>('key?space=acme&key=a');
    expect(page.value).toBe(2);
    expect(page.history!.changes.map(({ version, before, after, by }) => [version, before, after, by.kind === 'mutation' && by.userID])).toEqual([
      [2, 1, 2, 'bob'],
      [1, undefined, 1, 'ann'],
    ]);
    expect(page.history!.older).toBe(false);
    expect((await api<KeyPage>('key?space=acme&key=none')).value).toBeUndefined();
  });

  it("pages a key's history from the newest change back, 50 at a time", async () => {
    const { handle, api } = await app();
    for (let i = 1; i <= 120; i++) await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: i % 3 === 0 ? 'other' : 'a', value: i } }]);
    const versions: number[] = [];
    let before: number | undefined;
    for (let pages = 0; pages < 5; pages++) {
      const { history } = await api<KeyPage>(`key?space=acme&key=a${before === undefined ? '' : `&before=${before}`}`);
      versions.push(...history!.changes.map(({ version }) => version));
      if (!history!.older) break;
      before = history!.changes.at(-1)!.version;
    }
    expect(versions).toEqual(Array.from({ length: 120 }, (_, i) => 120 - i).filter((version) => version % 3 !== 0));
  });
});

describe('view as a user', () => {
  it("marks exactly the keys that user's pull gets, each with the prefix that lets it through", async () => {
    const keys = fc.constantFrom(
      'list/1/a',
      'list/1/b',
      'list/10/a',
      'list/1',
      'list/2/a',
      'list/12',
      'member/ann/1',
      'member/ann/2',
      'member/bob/2',
      'member/bob/10',
      'other',
    );
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(keys, { maxLength: 11 }), fc.constantFrom('ann', 'bob', 'carol'), async (present, user) => {
        const { handle, api } = await app();
        if (present.length > 0)
          await pushAs(
            handle,
            'acme',
            'writer',
            present.map((key) => ({ name: 'put' as const, args: { key, value: key } })),
          );
        const pulled = await pullKeys(handle, 'acme', user);
        const page = await api<ViewAsPage>(`view-as?space=acme&user=${user}&limit=100`);
        expect(page.entries.map(({ key }) => key).toSorted()).toEqual(present.toSorted());
        expect(
          page.entries
            .filter(({ received }) => received)
            .map(({ key }) => key)
            .toSorted(),
        ).toEqual(pulled.toSorted());
        for (const entry of page.entries) if (entry.received) expect(page.prefixes).toContain(entry.because);
        expect(page.received).toBe(pulled.length);
      }),
      { numRuns: Math.min(RUNS, 100) },
    );
  });

  it('shows a view that refuses, with its message', async () => {
    const { handle, api } = await app();
    await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: 'k', value: 1 } }]);
    const page = await api<ViewAsPage>('view-as?space=acme&user=banned');
    expect(page.refused).toBe('HTTPError: banned users read nothing');
    expect(page.prefixes).toEqual([]);
    expect(page.received).toBe(0);
  });
});

describe('live numbers and the feed', () => {
  it('count a push in its second, with its mutations and latency', async () => {
    const { handle, api } = await app();
    await pushAs(handle, 'acme', 'ann', [
      { name: 'put', args: { key: 'a', value: 1 } },
      { name: 'put', args: { key: 'b', value: 1 } },
    ]);
    await pullKeys(handle, 'acme', 'ann');
    const live = await api<LivePage>('live');
    expect(live.seconds).toHaveLength(60);
    const total = (field: 'pushes' | 'pulls' | 'mutations') => live.seconds.reduce((sum, second) => sum + second[field], 0);
    expect([total('pushes'), total('pulls'), total('mutations')]).toEqual([1, 1, 2]);
    expect(live.latency.push).toMatchObject({ count: 1, p50: expect.any(Number) });
  });

  it('tails the feed, then reads on from its cursor', async () => {
    const { handle, api } = await app();
    for (let i = 0; i < 30; i++) await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: 'n', value: i } }]);
    const tail = await api<FeedTail>('feed?space=acme');
    expect(tail.changes.map(({ version }) => version)).toEqual(Array.from({ length: 20 }, (_, i) => 11 + i));
    await pushAs(handle, 'acme', 'bob', [{ name: 'put', args: { key: 'n', value: 'new' } }]);
    const next = await api<FeedTail>(`feed?space=acme&after=${tail.cursor}`);
    expect(next.changes).toMatchObject([{ version: 31, op: 'set', key: 'n', after: 'new', by: { userID: 'bob' } }]);
  });
});

/** The keys a first pull of `user` gets. */
async function pullKeys(handle: (request: Request) => Promise<Response>, space: string, user: string): Promise<string[]> {
  const response = await handle(
    new Request(`${ORIGIN}/pull?space=${space}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
      body: JSON.stringify({ pullVersion: 1, clientGroupID: `pull-${user}`, cookie: null, profileID: 'p', schemaVersion: '' }),
    }),
  );
  const body = (await response.json()) as { patch: Array<{ op: string; key?: string }> };
  return body.patch.filter(({ op }) => op === 'put').map(({ key }) => key!);
}

describe("a space's page", () => {
  it("says what inspect says, read from the space's record and bounded: client groups past 1,000 are cut, said so", async () => {
    const { ctx, handle, api } = await app();
    for (const user of ['ann', 'bob']) await pushAs(handle, 'acme', user, [{ name: 'put', args: { key: `k/${user}`, value: 1 } }]);
    await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: 'k/2', value: 2 } }]);
    const page = await api<SpacePage>('space?space=acme');
    const detail = await inspect(ctx, 'acme');
    expect(page).toMatchObject({
      version: detail.version,
      entries: detail.entries,
      bytes: detail.bytes,
      history: detail.history,
      clientGroups: 2,
      lastActivity: detail.lastActivity,
      groupsCut: false,
      schemaVersions: detail.schemaVersions,
      staging: [],
    });
    expect(page.groups).toEqual(detail.groups);
    expect(page.changes).toEqual({ from: 0, oldest: detail.changes!.oldest, checkpoints: [] });
    // Many groups: a store of its own, written through the backend door's pushes.
    const crowd = await app();
    await Promise.all(
      Array.from({ length: 1_010 }, (_, i) => pushAs(crowd.handle, 'crowd', `u${String(i).padStart(4, '0')}`, [{ name: 'put', args: { key: 'k', value: i } }])),
    );
    const crowded = await crowd.api<SpacePage>('space?space=crowd');
    expect(crowded.groupsCut).toBe(true);
    expect(crowded.groups).toHaveLength(1_000);
    expect(crowded.groups.every((group) => Object.keys(group.clients).length === 1)).toBe(true);
  });
});
