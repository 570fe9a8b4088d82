/**
 * Pokes go to the streams a change concerns. A stream that names its client group (as
 * `connectPokes` does) is poked for its own pushes and, under a view, for changes to what its
 * last pull depended on; one that names topics, for changes under them; any other, for every
 * change (the default). Before, every stream of a space got every poke: an app with a stream per
 * page pulled once per edit on every page, its own data or not.
 */
import { describe, expect, test } from 'vitest';
import { createContext, handleRequest, type JSONValue, localNotifier, memoryStorage, type SyncContext, type View } from '../../src/index.js';
import { PokeHub } from '../../src/poke/hub.js';
import { resolvePokes } from '../../src/context/options-schema.js';
import { ViewInterest, ViewReads } from '../../src/sync/interest.js';
import { Prefixes } from '../../src/sync/version/prefixes.js';
import * as fc from 'fast-check';
import type { PatchOperation } from '../../src/protocol.js';
import { applyPatch, mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';
import { EventReader } from './sse.js';

/** Lists: `list/<id>` and the todos under it; `share/<user>` holds the lists a user may read. */
const view: View = async (tx, { userID }) => {
  const shared = ((await tx.get(`share/${userID}`)) ?? []) as string[];
  return [`list/${userID}`, ...shared.map((id) => `list/${id}`)];
};

/** A context of lists, with `view` unless told otherwise; the Authorization header is the user. */
function lists(options: { view?: View | undefined } = { view }): SyncContext {
  return createContext({
    storage: memoryStorage(),
    mutators: {
      ...testMutators,
      fail: () => Promise.reject(new Error('refused')),
      putAll: async (tx, { entries }: { entries: Record<string, JSONValue> }) => {
        for (const [key, value] of Object.entries(entries)) await tx.set(key, value);
      },
    },
    authenticate: (request: Request) => request.headers.get('authorization') || null,
    // Each change pokes at once: the counts below are of pokes, not of coalescing windows.
    pokes: { coalesceMs: 0 },
    // The `fail` mutator's errors are the point, not news.
    onError: () => {},
    ...options,
  });
}

/** A page: a user's client group, with its poke stream and its own pulls. */
class Page {
  cookie: JSONValue = null;
  pulls = 0;
  data = new Map<string, JSONValue>();
  stream!: EventReader;
  #id = 0;

  constructor(
    readonly ctx: SyncContext,
    readonly user: string,
    readonly group: string,
  ) {}

  async open(query = `?clientGroupID=${this.group}`): Promise<this> {
    const response = await handleRequest(new Request(`http://localhost/poke${query}`, { headers: { authorization: this.user } }), this.ctx);
    expect(response.status, response.status === 200 ? '' : await response.clone().text()).toBe(200);
    this.stream = new EventReader(response.body!);
    await this.stream.until(() => this.stream.otherMessages.includes('data: open'));
    return this;
  }

  async pull(): Promise<void> {
    this.pulls++;
    const response = await handleRequest(post('/pull', pullBody(this.group, this.cookie), { authorization: this.user }), this.ctx);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { cookie: JSONValue; patch: PatchOperation[] };
    this.data = applyPatch(this.data, body.patch);
    this.cookie = body.cookie;
  }

  async push(name: string, args: JSONValue): Promise<void> {
    const response = await handleRequest(
      post('/push', pushBody(this.group, [mutation(`${this.group}-c`, ++this.#id, name, args)]), { authorization: this.user }),
      this.ctx,
    );
    expect(response.status).toBe(200);
    // Past the coalescing window (0 ms, a timer set before this one): the next push pokes alone.
    await new Promise((resolve) => setTimeout(resolve, 2));
  }

  /** Waits for a poke past `count`, then pulls, as an app does on each poke. */
  async pullOnPoke(count: number): Promise<void> {
    await this.stream.until(() => this.pokes > count);
    await this.pull();
  }

  get pokes(): number {
    return this.stream.pokes;
  }
}

/** Waits until every page has had `expected` pokes in all (a change that concerns them all is the barrier). */
async function settle(pages: Page[], expected: number[]): Promise<void> {
  await Promise.all(pages.map((page, i) => page.stream.until(() => page.pokes >= expected[i]!)));
  expect(pages.map((page) => page.pokes)).toEqual(expected);
}

describe('pokes to whom they concern', () => {
  test('under a view, a change pokes the groups whose view covers it, and the pushing group; not the others', async () => {
    const ctx = lists();
    const admin = new Page(ctx, 'admin', 'admin-g');
    const alice = await new Page(ctx, 'alice', 'alice-g').open();
    const bob = await new Page(ctx, 'bob', 'bob-g').open();
    await alice.pull();
    await bob.pull();
    await alice.push('put', { key: 'list/alice/todo/1', value: 'milk' });
    await alice.pullOnPoke(0);
    await bob.push('put', { key: 'list/bob/todo/1', value: 'bread' });
    await bob.pullOnPoke(0);
    // A barrier both views read: had either been poked for the other's write, it would count 3.
    await admin.push('putAll', { entries: { 'share/alice': [], 'share/bob': [] } });
    await settle([alice, bob], [2, 2]);
  });

  test('a change to what the view read (a share), outside the prefixes it returned, pokes: the view itself changed', async () => {
    const ctx = lists();
    const admin = new Page(ctx, 'admin', 'admin-g');
    const bob = await new Page(ctx, 'bob', 'bob-g').open();
    await bob.pull();
    await admin.push('put', { key: 'list/alice/todo/1', value: 'milk' });
    await admin.push('put', { key: 'share/bob', value: ['alice'] });
    await settle([bob], [1]);
    await bob.pull();
    // Now alice's list is in bob's view.
    await admin.push('put', { key: 'list/alice/todo/2', value: 'eggs' });
    await settle([bob], [2]);
  });

  test('the pushing group is poked for its push even when its mutation wrote nothing (it learns its lastMutationID by pulling)', async () => {
    const ctx = lists();
    const alice = await new Page(ctx, 'alice', 'alice-g').open();
    const bob = await new Page(ctx, 'bob', 'bob-g').open();
    await alice.pull();
    await bob.pull();
    await alice.push('fail', {});
    await alice.pullOnPoke(0);
    await new Page(ctx, 'admin', 'admin-g').push('putAll', { entries: { 'share/alice': [], 'share/bob': [] } });
    await settle([alice, bob], [2, 1]);
  });

  test('after a poke, the group gets every poke until one of its pulls ends here (it may have pulled through another instance)', async () => {
    const ctx = lists();
    const admin = new Page(ctx, 'admin', 'admin-g');
    const bob = await new Page(ctx, 'bob', 'bob-g').open();
    await bob.pull();
    await admin.push('put', { key: 'share/bob', value: [] });
    await settle([bob], [1]);
    // Not bob's, but bob has not pulled here since his poke: what he holds is not known here.
    await admin.push('put', { key: 'list/carol/todo/1', value: 'x' });
    await settle([bob], [2]);
    await bob.pull();
    await admin.push('put', { key: 'list/carol/todo/2', value: 'y' });
    await admin.push('put', { key: 'share/bob', value: [] });
    await settle([bob], [3]);
  });

  test('a stream that names no group (or a group with no pull here yet) gets every poke, as before', async () => {
    const ctx = lists();
    const plain = await new Page(ctx, 'bob', 'bob-g').open('');
    const unknown = await new Page(ctx, 'bob', 'bob-2').open();
    await new Page(ctx, 'admin', 'admin-g').push('put', { key: 'list/carol/todo/1', value: 'x' });
    await settle([plain, unknown], [1, 1]);
  });

  test('without a view, a stream naming its group still gets every change (its data is the whole space)', async () => {
    const ctx = lists({ view: undefined });
    const bob = await new Page(ctx, 'bob', 'bob-g').open();
    await bob.pull();
    await new Page(ctx, 'admin', 'admin-g').push('put', { key: 'anything', value: 1 });
    await settle([bob], [1]);
  });

  test('topics: a stream naming key prefixes hears only changes under them (whole segments), and its own pushes', async () => {
    const ctx = lists({ view: undefined });
    const admin = new Page(ctx, 'admin', 'admin-g');
    const a = await new Page(ctx, 'alice', 'alice-g').open('?clientGroupID=alice-g&topic=list/a&topic=user/alice');
    const b = await new Page(ctx, 'bob', 'bob-g').open('?topic=list/b');
    await admin.push('put', { key: 'list/ab/todo/1', value: 'not a' });
    await admin.push('put', { key: 'list/a/todo/1', value: 'a' });
    await a.push('put', { key: 'elsewhere', value: 'own push' });
    await admin.push('put', { key: 'user/alice', value: 'profile' });
    await admin.push('put', { key: 'list/b', value: 'b' });
    await settle([a, b], [3, 1]);
  });

  test('a change of more keys than a poke carries pokes every stream', async () => {
    const ctx = lists();
    const bob = await new Page(ctx, 'bob', 'bob-g').open();
    await bob.pull();
    const entries = Array.from({ length: 65 }, (_, i) => mutation('admin-c', i + 1, 'put', { key: `list/carol/${i}`, value: i }));
    const response = await handleRequest(post('/push', pushBody('admin-g', entries), { authorization: 'admin' }), ctx);
    expect(response.status).toBe(200);
    await settle([bob], [1]);
  });

  test('a clientGroupID or topic that no pull could use is a 400 saying why', async () => {
    const ctx = lists();
    const answer = async (query: string) => {
      const response = await handleRequest(new Request(`http://localhost/poke${query}`, { headers: { authorization: 'bob' } }), ctx);
      return [response.status, await response.text()];
    };
    expect(await answer(`?clientGroupID=`)).toEqual([400, expect.stringContaining('clientGroupID must be 1 to 512 bytes')]);
    expect(await answer(`?clientGroupID=${'x'.repeat(513)}`)).toEqual([400, expect.stringContaining('limits.idBytes')]);
    expect(await answer(`?topic=${'x'.repeat(1025)}`)).toEqual([400, expect.stringContaining('limits.keyBytes')]);
    expect(await answer(`?${Array.from({ length: 101 }, (_, i) => `topic=t${i}`).join('&')}`)).toEqual([400, expect.stringContaining('at most 100 topics')]);
  });

  test('pulls per edit: a page per user, 20 edits by alice in her own list, each poked page pulling: 1 (alice), 0, 0 with groups named; 1, 1, 1 without', async () => {
    /** The pulls each page made for the 20 edits, its stream naming its group or not. */
    const run = async (named: boolean) => {
      const ctx = lists();
      const pages = await Promise.all(['alice', 'bob', 'carol'].map((user) => new Page(ctx, user, `${user}-g`).open(named ? `?clientGroupID=${user}-g` : '')));
      for (const page of pages) await page.pull();
      for (let i = 0; i < 20; i++) {
        const seen = pages.map((page) => page.pokes);
        await pages[0]!.push('put', { key: `list/alice/todo/${i}`, value: i });
        // Alice is poked either way (her push, her list); the others only when unnamed.
        const poked = named ? pages.slice(0, 1) : pages;
        await Promise.all(poked.map((page) => page.stream.until(() => page.pokes > seen[pages.indexOf(page)]!)));
        // As an app pulling on each message does, before the next edit.
        await Promise.all(pages.filter((page, p) => page.pokes > seen[p]!).map((page) => page.pull()));
      }
      // A write that concerns all three: had another poke reached bob or carol, they would count it.
      await new Page(ctx, 'admin', 'admin-g').push('putAll', { entries: { 'share/alice': [], 'share/bob': [], 'share/carol': [] } });
      await settle(pages, named ? [21, 1, 1] : [21, 21, 21]);
      return pages.map((page) => page.pulls - 1);
    };
    expect(await run(true)).toEqual([20, 0, 0]);
    expect(await run(false)).toEqual([20, 20, 20]);
  });
});

describe('no page misses a change that concerns it', () => {
  const USERS = ['alice', 'bob', 'carol'];
  const step = fc.oneof(
    // A write by a user (or the admin) into some user's list: theirs, or one they cannot read.
    fc.record({ kind: fc.constant('put' as const), by: fc.nat({ max: 3 }), list: fc.nat({ max: 2 }), todo: fc.nat({ max: 3 }), value: fc.nat({ max: 9 }) }),
    fc.record({ kind: fc.constant('del' as const), by: fc.nat({ max: 3 }), list: fc.nat({ max: 2 }), todo: fc.nat({ max: 3 }) }),
    // Sharing and unsharing: what the views read.
    fc.record({ kind: fc.constant('share' as const), with: fc.nat({ max: 2 }), lists: fc.subarray([0, 1, 2]) }),
    fc.record({ kind: fc.constant('fail' as const), by: fc.nat({ max: 2 }) }),
  );
  const RUNS = Number(process.env.FC_RUNS ?? 100);

  test('property: pages that pull only when poked (groups named, under a view) always hold exactly their view of the server', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const ctx = lists();
        const pages = await Promise.all(USERS.map((user) => new Page(ctx, user, `${user}-g`).open()));
        const admin = new Page(ctx, 'admin', 'admin-g');
        for (const page of pages) await page.pull();
        const model = new Map<string, JSONValue>();
        const by = (n: number) => pages[n] ?? admin;
        for (const s of steps) {
          const seen = pages.map((page) => page.pokes);
          if (s.kind === 'put' || s.kind === 'del') {
            const key = `list/${USERS[s.list]}/todo/${s.todo}`;
            await by(s.by).push(s.kind, s.kind === 'put' ? { key, value: s.value } : { key });
            if (s.kind === 'put') model.set(key, s.value);
            else model.delete(key);
          } else if (s.kind === 'share') {
            const value = s.lists.map((n) => USERS[n]!);
            await admin.push('put', { key: `share/${USERS[s.with]}`, value });
            model.set(`share/${USERS[s.with]}`, value);
          } else {
            await by(s.by).push('fail', {});
          }
          // Every poke sent for this step has been enqueued by now; let the readers take them.
          await new Promise((resolve) => setTimeout(resolve, 5));
          for (const [i, page] of pages.entries()) if (page.pokes > seen[i]!) await page.pull();
          for (const page of pages) {
            const shared = (model.get(`share/${page.user}`) ?? []) as string[];
            const lists = [page.user, ...shared];
            const expected = new Map([...model].filter(([key]) => lists.some((list) => key === `list/${list}` || key.startsWith(`list/${list}/`))));
            expect(page.data, `${page.user} after ${JSON.stringify(s)}`).toEqual(expected);
          }
        }
        for (const page of pages) await page.stream.cancel();
      }),
      { numRuns: RUNS },
    );
  });
});

describe('the hub', () => {
  test("records no pull's interest until a stream was opened on it: a context that serves no pokes pays nothing for its views' reads", async () => {
    const hub = new PokeHub(localNotifier(), resolvePokes({ coalesceMs: 0 }));
    expect(hub.pulling('s', 'bob', 'g')).toBeUndefined();
    const stream = await hub.open('s', 'bob', { group: 'g' });
    expect(hub.pulling('s', 'bob', 'g')).toBeTypeOf('function');
    await stream.cancel();
  });

  const detail = (keys: string[], groups: Array<{ userID: string | undefined; clientGroupID: string }> = []) => ({ keys, groups });
  const interest = (prefixes: string[], read: string[] = []) => {
    const reads = new ViewReads();
    for (const key of read) reads.get(key);
    return new ViewInterest(Prefixes.canonical(prefixes), reads);
  };

  test('while a pull of the group is under way, its streams get every poke: the change may be in the view that pull is choosing', async () => {
    const notifier = localNotifier();
    const hub = new PokeHub(notifier, resolvePokes({ coalesceMs: 0 }));
    const stream = new EventReader((await hub.open('s', 'bob', { group: 'g' })) as ReadableStream<Uint8Array<ArrayBuffer>>);
    hub.pulling('s', 'bob', 'g')!(interest(['list/bob']));
    const pulling = hub.pulling('s', 'bob', 'g')!;
    notifier.notify('s', detail(['list/alice/1']));
    await stream.until(() => stream.pokes === 1);
    pulling(interest(['list/bob', 'list/alice']));
    await stream.cancel();
  });

  test('two pulls that overlapped leave the group unknown (the later to end may hold the older view), so it gets every poke', async () => {
    const notifier = localNotifier();
    const hub = new PokeHub(notifier, resolvePokes({ coalesceMs: 0 }));
    const stream = new EventReader((await hub.open('s', 'bob', { group: 'g' })) as ReadableStream<Uint8Array<ArrayBuffer>>);
    const first = hub.pulling('s', 'bob', 'g')!;
    const second = hub.pulling('s', 'bob', 'g')!;
    second(interest(['list/bob', 'list/alice']));
    first(interest(['list/bob']));
    notifier.notify('s', detail(['list/alice/1']));
    await stream.until(() => stream.pokes === 1);
    // A pull alone sets it again.
    hub.pulling('s', 'bob', 'g')!(interest(['list/bob']));
    notifier.notify('s', detail(['list/alice/2']));
    notifier.notify('s', detail(['list/bob/1']));
    await stream.until(() => stream.pokes === 2);
    notifier.notify('s', undefined);
    await stream.until(() => stream.pokes === 3);
    await stream.cancel();
  });

  test('a stream is told its user’s group only: another user’s group of the same ID is not its pusher', async () => {
    const notifier = localNotifier();
    const hub = new PokeHub(notifier, resolvePokes({ coalesceMs: 0 }));
    const stream = new EventReader((await hub.open('s', 'bob', { group: 'g' })) as ReadableStream<Uint8Array<ArrayBuffer>>);
    hub.pulling('s', 'bob', 'g')!(interest(['list/bob']));
    notifier.notify('s', detail(['list/alice/1'], [{ userID: 'alice', clientGroupID: 'g' }]));
    notifier.notify('s', detail(['list/alice/2'], [{ userID: 'bob', clientGroupID: 'g' }]));
    await stream.until(() => stream.pokes === 1);
    // That poke left the group unknown: the next change reaches it whatever it touched.
    notifier.notify('s', detail(['list/alice/3']));
    await stream.until(() => stream.pokes === 2);
    await stream.cancel();
  });
});
